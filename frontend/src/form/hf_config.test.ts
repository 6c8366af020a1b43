import { describe, expect, it } from "vitest";

import { buildRequest, DEFAULT_VALUES, suggestName } from "./scenario";
import {
  HF_CONFIG_MAX_CHARS,
  hfConfigErrorLines,
  hfConfigRequest,
  importSummary,
  importedModelLabel,
  withImportedModel,
} from "./hf_config";

// The model section POST /api/v1/models/from-hf-config/ answers for Qwen2.5-7B's config.json
// (tests/data/hf_configs/qwen2.5-7b.json through simulation/hf_config.py).
const qwen = {
  name: "Qwen2ForCausalLM", num_layers: 28, hidden_size: 3584, num_attention_heads: 28, num_kv_heads: 4,
  ffn_hidden_size: 18944, vocab_size: 152064, gated_mlp: true, tied_embeddings: false,
  position_embedding: "rope", norm: "rmsnorm", linear_bias: false, qkv_bias: true, dropout: false,
  max_seq_len: 131072, source: "imported config.json (model_type qwen2)",
};

describe("hfConfigRequest", () => {
  it("sends the pasted object", () => {
    expect(hfConfigRequest(' {"model_type": "llama", "hidden_size": 4096}\n')).toEqual({
      config: { model_type: "llama", hidden_size: 4096 },
    });
  });
  it("says what is wrong before sending", () => {
    expect(hfConfigRequest("   ")).toHaveProperty("error");
    expect((hfConfigRequest("{model_type: llama}") as { error: string }).error).toMatch(/^This is not JSON/);
    expect(hfConfigRequest("[1, 2]")).toEqual({ error: "A config.json is one JSON object ({ … })." });
    expect(hfConfigRequest("null")).toHaveProperty("error");
    expect(hfConfigRequest(`{"x": "${"y".repeat(HF_CONFIG_MAX_CHARS)}"}`)).toHaveProperty("error");
  });
});

describe("the imported model", () => {
  it("is labelled with its name and dimensions", () => {
    expect(importedModelLabel(qwen)).toBe("Qwen2ForCausalLM — 28 layers, hidden 3584 (imported config.json)");
    expect(importedModelLabel({ name: "Mixtral", num_layers: 32, hidden_size: 4096, num_experts: 8 }))
      .toBe("Mixtral — 32 layers, hidden 4096, 8 experts (imported config.json)");
  });

  it("names shared experts, dense first layers, latent attention and a sliding window", () => {
    // the model sections simulation/hf_config.py answers for DeepSeek-V3's and Gemma-2-9B's
    // config.json (tests/data/hf_configs/deepseek-v3.json, gemma2-9b.json)
    const v3 = { name: "DeepseekV3ForCausalLM", num_layers: 61, hidden_size: 7168, num_experts: 256,
                 num_shared_experts: 1, first_dense_layers: 3, kv_lora_rank: 512, q_lora_rank: 1536 };
    expect(importedModelLabel(v3)).toBe("DeepseekV3ForCausalLM — 61 layers, hidden 7168, 256 experts + 1 shared, "
      + "first 3 dense, latent attention (kv rank 512) (imported config.json)");
    const gemma = { name: "Gemma2ForCausalLM", num_layers: 42, hidden_size: 3584, sliding_window: 4096,
                    sliding_window_layers: "alternate" };
    expect(importedModelLabel(gemma)).toBe("Gemma2ForCausalLM — 42 layers, hidden 3584, "
      + "sliding window 4096 (alternate layers) (imported config.json)");
  });

  it("is the scenario's model when the custom entry is chosen, the example's other settings kept", () => {
    const example = { schema: 1, model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" },
                      training: { flash_attention: true } };
    const base = withImportedModel(example, qwen);
    expect(example.model).toEqual({ preset: "llama2-7b" });        // not changed in place
    const { scenario } = buildRequest({ ...DEFAULT_VALUES, "model.preset": "" }, base);
    expect(scenario.model).toEqual(qwen);
    // a preset chosen afterwards wins over the import
    expect(buildRequest({ ...DEFAULT_VALUES, "model.preset": "gemma-7b" }, base).scenario.model)
      .toEqual({ preset: "gemma-7b" });
    expect(buildRequest({ ...DEFAULT_VALUES, "model.preset": "" }, withImportedModel(null, qwen)).scenario.model)
      .toEqual(qwen);
  });

  it("summarises what was ignored and the engine's notes", () => {
    expect(importSummary({ model: qwen, ignored: ["bos_token_id", "rope_theta"],
                           notes: ["sliding_window: full attention is modelled"] })).toEqual([
      "Imported Qwen2ForCausalLM — 28 layers, hidden 3584.",
      "Ignored (no model field): bos_token_id, rope_theta.",
      "Note: sliding_window: full attention is modelled.",
    ]);
    expect(importSummary({ model: qwen, ignored: [], notes: [] })).toHaveLength(1);
  });
});

describe("hfConfigErrorLines", () => {
  it("names the config key of a 400", () => {
    expect(hfConfigErrorLines({ "config.num_attention_heads": ["must divide hidden_size 4096 (or give head_dim), got 33"],
                                config: ["must be a JSON object (the config.json), got list"] })).toEqual([
      "num_attention_heads: must divide hidden_size 4096 (or give head_dim), got 33",
      "must be a JSON object (the config.json), got list",
    ]);
  });
});

describe("the suggested name", () => {
  it("names the imported model when its blank entry is chosen", () => {
    const values = { ...DEFAULT_VALUES, "model.preset": "", "cluster.num_nodes": "1", "strategy.kind": "zero3" };
    expect(suggestName(values, [], [], "Qwen2ForCausalLM")).toMatch(/^Qwen2ForCausalLM · 1× /);
    expect(suggestName(values, [], [])).toMatch(/^custom model · /);
    expect(suggestName({ ...values, "model.preset": "gemma-7b" }, [], [], "Qwen2ForCausalLM")).toMatch(/^gemma-7b · /);
  });
});
