import { describe, expect, it } from "vitest";

import {
  DEFAULT_VALUES,
  buildRequest,
  hasAdvancedValues,
  inputNameForErrorKey,
  modelOptionLabel,
  nodeOptionLabel,
  offloadAfterStrategyChange,
  pipelineLayers,
  POSITION_EMBEDDINGS,
  recomputeModules,
  settingsNotOnForm,
  STRATEGIES,
  suggestName,
  valuesFromScenario,
} from "./scenario";
import { STRATEGY_NAMES, strategyName } from "../names";
import type { ScenarioJSON } from "../types";

const values = {
  ...DEFAULT_VALUES,
  name: " 70B on two DGX ",
  "model.preset": "llama2-70b",
  "cluster.node": "dgx-h100",
  "cluster.num_nodes": "2",
  "cluster.gpus_per_node": "8",
  "strategy.kind": "zero3",
  "training.global_batch_size": "32",
  "training.flash_attention": true,
};

describe("buildRequest", () => {
  it("builds the scenario the API takes, numbers as numbers", () => {
    expect(buildRequest(values)).toEqual({
      name: "70B on two DGX",
      scenario: {
        schema: 1,
        model: { preset: "llama2-70b" },
        cluster: { node: "dgx-h100", num_nodes: 2, gpus_per_node: 8 },
        training: {
          micro_batch_size: 1, global_batch_size: 32, seq_len: 4096, tensor_parallel: 1,
          pipeline_parallel: 1, precision: "bf16", optimizer: "adam", recompute: "none",
          flash_attention: true, sequence_parallel: false, loss_kernel: "torch",
        },
        strategy: { kind: "zero3", offload_optimizer: "none", offload_params: "none", offload_activations: "none" },
        // the engine's defaults, written out; blank numbers (interval = Daly's optimum) left out
        checkpoint: { content: "model_states", target: "parallel_fs", method: "blocking", sharded: true },
        convention: "realistic",
      },
    });
  });

  it("sends expert parallelism only when it is set, and reads it back", () => {
    const moe = { ...values, "model.preset": "mixtral-8x7b", "training.expert_parallel": "8",
      "training.moe_capacity_factor": "1.25", "training.moe_routing_imbalance": "1.5",
      "training.moe_a2a_overlap": true, "training.moe_router_group_topk": "4" };
    const training = buildRequest(moe).scenario.training as Record<string, unknown>;
    expect(training).toMatchObject({ expert_parallel: 8, moe_capacity_factor: 1.25,
      moe_routing_imbalance: 1.5, moe_a2a_overlap: true, moe_router_group_topk: 4 });
    const plain = buildRequest(values).scenario.training as Record<string, unknown>;
    for (const k of ["expert_parallel", "moe_capacity_factor", "moe_routing_imbalance", "moe_a2a_overlap",
      "moe_router_group_topk"]) {
      expect(plain).not.toHaveProperty(k);
    }
    const back = valuesFromScenario({ cluster: { node: "dgx-h100" },
      training: { expert_parallel: 8, moe_a2a_overlap: true, moe_router_group_topk: 4 } });
    expect(back["training.expert_parallel"]).toBe("8");
    expect(back["training.moe_router_group_topk"]).toBe("4");
    expect(back["training.moe_a2a_overlap"]).toBe(true);
    expect(inputNameForErrorKey("scenario.training.expert_parallel")).toBe("training.expert_parallel");
  });

  it("sends the chosen cluster profile by id, and none when none is chosen", () => {
    expect(buildRequest({ ...values, "cluster.profile": "7" }).scenario.cluster).toEqual(
      { node: "dgx-h100", num_nodes: 2, gpus_per_node: 8, profile: 7 });
    expect(buildRequest({ ...values, "cluster.profile": "" }).scenario.cluster).not.toHaveProperty("profile");
    // a scenario's own profile comes back into the form, and the form's choice replaces it
    expect(valuesFromScenario({ cluster: { node: "dgx-h100", profile: 3 } })["cluster.profile"]).toBe("3");
    expect(buildRequest({ ...values, "cluster.profile": "" }, { cluster: { node: "dgx-h100", profile: 3 } })
      .scenario.cluster).not.toHaveProperty("profile");
  });

  it("sends the advanced and checkpoint inputs under their dotted paths, numbers as numbers", () => {
    const r = buildRequest({
      ...values,
      "training.compute_efficiency": "0.6",
      "training.network_efficiency": " 0.7 ",
      "strategy.prefetch_depth": "0",
      "strategy.prefetch_miss_rate": "0.05",
      "strategy.offload_activations": "cpu",
      "checkpoint.target": "local_nvme",
      "checkpoint.method": "async",
      "checkpoint.content": "weights_only",
      "checkpoint.sharded": false,
      "checkpoint.interval_s": "3600",
      "checkpoint.quantize_bits": "8",
      "checkpoint.differential_fraction": "0.25",
      "checkpoint.gpu_failure_rate_per_hour": "1e-5",
    });
    expect(r.scenario.training).toMatchObject({ compute_efficiency: 0.6, network_efficiency: 0.7 });
    // depth 0 (no prefetch) is a value, not a blank
    expect(r.scenario.strategy).toMatchObject({ prefetch_depth: 0, prefetch_miss_rate: 0.05, offload_activations: "cpu" });
    expect(r.scenario.checkpoint).toEqual({
      content: "weights_only", target: "local_nvme", method: "async", sharded: false, interval_s: 3600,
      quantize_bits: 8, differential_fraction: 0.25, gpu_failure_rate_per_hour: 1e-5,
    });
  });

  it("sends a non-number as typed so the server's message names the field", () => {
    const r = buildRequest({ ...values, "checkpoint.interval_s": "soon" });
    expect(r.scenario.checkpoint).toMatchObject({ interval_s: "soon" });
  });

  it("leaves out an empty global batch and sends the shard group only for HSDP", () => {
    const r = buildRequest({ ...values, "training.global_batch_size": "", "strategy.shard_group_size": "8" });
    expect(r.scenario.training).not.toHaveProperty("global_batch_size");
    expect(r.scenario.strategy).not.toHaveProperty("shard_group_size");
    const hsdp = buildRequest({ ...values, "strategy.kind": "fsdp_hybrid_shard", "strategy.shard_group_size": "8" });
    expect(hsdp.scenario.strategy).toMatchObject({ kind: "fsdp_hybrid_shard", shard_group_size: 8 });
  });

  it("never sends an offload the strategy cannot do", () => {
    const r = buildRequest({ ...values, "strategy.kind": "ddp", "strategy.offload_optimizer": "cpu", "strategy.offload_params": "nvme" });
    expect(r.scenario.strategy).toEqual({ kind: "ddp", offload_optimizer: "none", offload_params: "none", offload_activations: "none" });
    const z2 = buildRequest({ ...values, "strategy.kind": "zero2", "strategy.offload_optimizer": "cpu", "strategy.offload_params": "nvme" });
    expect(z2.scenario.strategy).toEqual({ kind: "zero2", offload_optimizer: "cpu", offload_params: "none", offload_activations: "none" });
  });

  it("keeps an example's settings the form has no input for", () => {
    const base = {
      model: { preset: "llama2-70b" },
      cluster: { node: "dgx-h100", num_nodes: 1, tiers: { cxl: { capacity_bytes: 1e12, read_bytes_per_s: 1e11, write_bytes_per_s: 1e11 } } },
      strategy: { kind: "zero3", prefetch_depth: 2 },
      checkpoint: { method: "in_memory_then_flush", flush_every: 5, detect_s: 60, quantize_bits: 8 },
    };
    const r = buildRequest(values, base);
    expect(r.scenario.cluster).toEqual({ tiers: base.cluster.tiers, node: "dgx-h100", num_nodes: 2, gpus_per_node: 8 });
    // the prefetch depth has an input now: the (blank) input wins over the example
    expect(r.scenario.strategy).not.toHaveProperty("prefetch_depth");
    // detect_s has no input and is kept; flush_every goes with a method that is not in_memory_then_flush
    expect(r.scenario.checkpoint).toEqual({ detect_s: 60, content: "model_states", target: "parallel_fs", method: "blocking", sharded: true });
    const flush = buildRequest({ ...values, "checkpoint.method": "in_memory_then_flush", "checkpoint.quantize_bits": "8" }, base);
    expect(flush.scenario.checkpoint).toMatchObject({ flush_every: 5, detect_s: 60, quantize_bits: 8 });
    // another node template drops the example's tier overrides
    expect(buildRequest({ ...values, "cluster.node": "dgx-a100-80gb" }, base).scenario.cluster).not.toHaveProperty("tiers");
  });

  it("sends a custom model from an example when no preset is chosen", () => {
    const base = { model: { name: "tiny", num_params: 1e9, num_layers: 8, hidden_size: 1024 }, cluster: { node: "dgx-h100" } };
    expect(buildRequest({ ...values, "model.preset": "" }, base).scenario.model).toEqual(base.model);
  });
});

describe("DEFAULT_VALUES", () => {
  it("starts a new scenario with flash attention on (eager attention overflows the default by 81 GiB)", () => {
    expect(DEFAULT_VALUES["training.flash_attention"]).toBe(true);
    expect(buildRequest(DEFAULT_VALUES).scenario.training).toMatchObject({ flash_attention: true });
  });
});

describe("valuesFromScenario", () => {
  it("reads a scenario that leaves flash attention out as the engine's default, off", () => {
    // simulation/scenario.py: Training.flash_attention = False
    expect(valuesFromScenario({ model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" } })["training.flash_attention"]).toBe(false);
    expect(valuesFromScenario({ model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, training: { flash_attention: true } })["training.flash_attention"]).toBe(true);
  });

  it("fills the form from an example, strings for inputs", () => {
    const v = valuesFromScenario(
      {
        model: { preset: "llama2-70b" },
        cluster: { node: "dgx-h100", num_nodes: 2, gpus_per_node: 8 },
        training: { global_batch_size: 32, flash_attention: true, recompute: "full" },
        strategy: { kind: "zero_infinity" },
        convention: "zero_paper",
      },
      "Ex",
    );
    expect(v).toMatchObject({
      name: "Ex", "model.preset": "llama2-70b", "cluster.num_nodes": "2", "training.global_batch_size": "32",
      "training.flash_attention": true, "training.recompute": "full", "strategy.kind": "zero_infinity",
      // ZeRO-Infinity's defaults when the example does not say
      "strategy.offload_optimizer": "nvme", "strategy.offload_params": "nvme", convention: "zero_paper",
      "training.seq_len": "4096",
    });
  });

  it("round-trips through buildRequest", () => {
    const req = buildRequest(values);
    expect(buildRequest(valuesFromScenario(req.scenario, req.name)).scenario).toEqual(req.scenario);
    const full = buildRequest({
      ...values, "strategy.prefetch_depth": "2", "training.compute_efficiency": "0.5",
      "checkpoint.method": "async", "checkpoint.sharded": false, "checkpoint.quantize_bits": "4", "checkpoint.mtbf_s": "86400",
    });
    expect(buildRequest(valuesFromScenario(full.scenario, full.name)).scenario).toEqual(full.scenario);
  });

  it("fills the checkpoint and advanced inputs, a null quantization as none", () => {
    const v = valuesFromScenario({
      model: { preset: "llama2-70b" }, cluster: { node: "dgx-h100" },
      strategy: { kind: "zero3", prefetch_depth: 2 },
      checkpoint: { method: "async", sharded: false, quantize_bits: null, interval_s: 1800 },
    });
    expect(v).toMatchObject({
      "strategy.prefetch_depth": "2", "checkpoint.method": "async", "checkpoint.sharded": false,
      "checkpoint.quantize_bits": "", "checkpoint.interval_s": "1800", "checkpoint.target": "parallel_fs",
    });
    expect(hasAdvancedValues(v)).toBe(true);
    expect(hasAdvancedValues(DEFAULT_VALUES)).toBe(false);
  });

  it("names settings that have no input", () => {
    expect(settingsNotOnForm({
      model: { preset: "llama2-70b" },
      cluster: { node: "x", tiers: { cxl: { capacity_bytes: 1 } } },
      strategy: { kind: "zero3", prefetch_depth: 2 },
      checkpoint: { method: "async", detect_s: 60 },
    })).toEqual(["cluster.tiers.cxl.capacity_bytes", "checkpoint.detect_s"]);
  });
});

describe("the NVLink domain (cluster.nvlink_domain_gpus, GB200 NVL72)", () => {
  it("sends it as a number, leaves it out when blank, and reads it back from a scenario", () => {
    const gb = { ...values, "cluster.node": "gb200-nvl72", "cluster.gpus_per_node": "4",
      "cluster.num_nodes": "18", "cluster.nvlink_domain_gpus": "72" };
    expect(buildRequest(gb).scenario.cluster).toMatchObject({ node: "gb200-nvl72", num_nodes: 18, nvlink_domain_gpus: 72 });
    expect(buildRequest(values).scenario.cluster).not.toHaveProperty("nvlink_domain_gpus");
    const scenario = { model: { preset: "llama2-70b" }, cluster: { node: "gb200-nvl72", num_nodes: 36, nvlink_domain_gpus: 72 } };
    const v = valuesFromScenario(scenario);
    expect(v["cluster.nvlink_domain_gpus"]).toBe("72");
    expect(hasAdvancedValues(v)).toBe(true);
    expect(settingsNotOnForm(scenario)).toEqual([]);
  });
});

describe("compute model, framework options and host CPU (issue #13's fields)", () => {
  it("sends each under its dotted path, booleans as booleans, numbers as numbers", () => {
    const req = buildRequest({
      ...values, "strategy.kind": "megatron_dist_opt",
      "training.compute_model": "constant", "training.software_stack": "torch_compile",
      "training.overlap_grad_reduce": "false", "training.gradient_accumulation_fusion": "true",
      "training.overlap_param_gather": true, "strategy.cpu_optimizer_cores_per_gpu": "3.5",
      "cluster.cpu_cores": "64", "cluster.cpu_isa": "avx2",
    }).scenario;
    expect(req.training).toMatchObject({
      compute_model: "constant", software_stack: "torch_compile", overlap_grad_reduce: false,
      gradient_accumulation_fusion: true, overlap_param_gather: true,
    });
    expect(req.strategy).toMatchObject({ kind: "megatron_dist_opt", cpu_optimizer_cores_per_gpu: 3.5 });
    expect(req.cluster).toMatchObject({ cpu_cores: 64, cpu_isa: "avx2" });
  });

  it("leaves blanks (the engine's defaults) out, so older scenarios' JSON stays the same", () => {
    const req = buildRequest(values).scenario;
    for (const k of ["compute_model", "software_stack", "overlap_grad_reduce", "gradient_accumulation_fusion",
      "overlap_param_gather"]) expect(req.training).not.toHaveProperty(k);
    for (const k of ["deepspeed_release", "cpu_optimizer_cores_per_gpu"]) expect(req.strategy).not.toHaveProperty(k);
    for (const k of ["cpu_cores", "cpu_isa"]) expect(req.cluster).not.toHaveProperty(k);
    // a blank switch drops what the example had: the framework's default applies again
    const base = { ...req, training: { ...req.training, overlap_grad_reduce: true } };
    expect(buildRequest(values, base).scenario.training).not.toHaveProperty("overlap_grad_reduce");
  });

  it("sends the DeepSpeed release only with DeepSpeed's ZeRO-3", () => {
    const old = { ...values, "strategy.deepspeed_release": "v0.3-v0.5" };
    expect(buildRequest({ ...old, "strategy.kind": "zero3" }).scenario.strategy).toMatchObject({ deepspeed_release: "v0.3-v0.5" });
    expect(buildRequest({ ...old, "strategy.kind": "zero_infinity" }).scenario.strategy).toMatchObject({ deepspeed_release: "v0.3-v0.5" });
    expect(buildRequest({ ...old, "strategy.kind": "fsdp_full_shard" }).scenario.strategy).not.toHaveProperty("deepspeed_release");
  });

  it("sends the FSDP version only with PyTorch FSDP, 1 left out", () => {
    const v2 = { ...values, "strategy.fsdp_version": "2" };
    expect(buildRequest({ ...v2, "strategy.kind": "fsdp_full_shard" }).scenario.strategy).toMatchObject({ fsdp_version: 2 });
    expect(buildRequest({ ...v2, "strategy.kind": "zero3" }).scenario.strategy).not.toHaveProperty("fsdp_version");
    expect(buildRequest({ ...values, "strategy.kind": "fsdp_full_shard" }).scenario.strategy).not.toHaveProperty("fsdp_version");
    const scenario = { model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, strategy: { kind: "fsdp_full_shard", fsdp_version: 2 },
      training: { repeat_kv: true } };
    const back = valuesFromScenario(scenario);
    expect(back["strategy.fsdp_version"]).toBe("2");
    expect(back["training.repeat_kv"]).toBe(true);
    expect(hasAdvancedValues(back)).toBe(true);
    expect(buildRequest(back).scenario.training).toMatchObject({ repeat_kv: true });
    expect(buildRequest(values).scenario.training).not.toHaveProperty("repeat_kv");
  });

  it("fills them from an example, opens the advanced section, and round-trips", () => {
    const scenario = {
      model: { preset: "llama2-70b" }, cluster: { node: "dgx-h100", cpu_cores: 48, cpu_isa: "avx2" },
      training: { framework: "megatron", compute_model: "work", software_stack: "megatron", overlap_grad_reduce: true,
        gradient_accumulation_fusion: false },
      strategy: { kind: "zero3", deepspeed_release: "v0.3-v0.5", cpu_optimizer_cores_per_gpu: 6 },
    };
    const v = valuesFromScenario(scenario);
    expect(v).toMatchObject({
      "cluster.cpu_cores": "48", "cluster.cpu_isa": "avx2", "training.compute_model": "work",
      "training.software_stack": "megatron", "training.overlap_grad_reduce": "true",
      "training.gradient_accumulation_fusion": "false", "strategy.deepspeed_release": "v0.3-v0.5",
      "strategy.cpu_optimizer_cores_per_gpu": "6", "training.overlap_param_gather": false,
    });
    expect(hasAdvancedValues(v)).toBe(true);
    expect(settingsNotOnForm(scenario)).toEqual([]);           // the framework has an input
    expect(v["training.framework"]).toBe("megatron");
    const req = buildRequest(v, scenario);
    expect(buildRequest(valuesFromScenario(req.scenario, req.name), scenario).scenario).toEqual(req.scenario);
    expect(req.scenario.training).toMatchObject(scenario.training);
    expect(req.scenario.strategy).toMatchObject(scenario.strategy);
  });
});

describe("uneven pipeline stages and the schedule (issue #15)", () => {
  it("reads a per-stage list with repeats, sends first/last counts as numbers", () => {
    expect(pipelineLayers("7, 8*14, 7")).toEqual([7, ...Array(14).fill(8), 7]);
    expect(pipelineLayers("19 21 21 19")).toEqual([19, 21, 21, 19]);
    expect(pipelineLayers("  ")).toBeUndefined();
    expect(pipelineLayers("8, x, 8")).toEqual([8, "x", 8]);      // the engine names training.pipeline_layers[1]
    const req = buildRequest({
      ...values, "training.pipeline_parallel": "16", "training.first_pipeline_layers": "7",
      "training.last_pipeline_layers": "7", "training.pipeline_schedule": "dualpipe",
    }).scenario;
    expect(req.training).toMatchObject({ pipeline_parallel: 16, first_pipeline_layers: 7, last_pipeline_layers: 7,
      pipeline_schedule: "dualpipe" });
    expect(inputNameForErrorKey("scenario.training.pipeline_layers[3]")).toBe("training.pipeline_layers");
  });

  it("leaves the defaults out (old scenarios' JSON unchanged) and round-trips an example", () => {
    const req = buildRequest(values).scenario;
    for (const k of ["pipeline_layers", "first_pipeline_layers", "last_pipeline_layers", "pipeline_schedule"]) {
      expect(req.training).not.toHaveProperty(k);
    }
    const scenario = {
      model: { preset: "llama2-70b" }, cluster: { node: "dgx-h100", num_nodes: 4 },
      training: { pipeline_parallel: 4, pipeline_layers: [19, 21, 21, 19] }, strategy: { kind: "zero1" },
    };
    const v = valuesFromScenario(scenario);
    expect(v["training.pipeline_layers"]).toBe("19, 21, 21, 19");
    expect(settingsNotOnForm(scenario)).toEqual([]);
    const again = buildRequest(v, scenario).scenario;
    expect(again.training).toMatchObject({ pipeline_layers: [19, 21, 21, 19] });
    expect(buildRequest({ ...v, "training.pipeline_layers": "" }, scenario).scenario.training)
      .not.toHaveProperty("pipeline_layers");
  });
});

describe("strategy changes", () => {
  it("sets ZeRO-Offload and ZeRO-Infinity targets and clears what is not allowed", () => {
    expect(offloadAfterStrategyChange("zero_offload", { optimizer: "none", params: "none" })).toEqual({ optimizer: "cpu", params: "none" });
    expect(offloadAfterStrategyChange("zero_infinity", { optimizer: "none", params: "none" })).toEqual({ optimizer: "nvme", params: "nvme" });
    expect(offloadAfterStrategyChange("zero_infinity", { optimizer: "cxl", params: "none" })).toEqual({ optimizer: "cxl", params: "nvme" });
    expect(offloadAfterStrategyChange("ddp", { optimizer: "cpu", params: "nvme" })).toEqual({ optimizer: "none", params: "none" });
    expect(offloadAfterStrategyChange("zero1", { optimizer: "cpu", params: "nvme" })).toEqual({ optimizer: "cpu", params: "none" });
  });
});

describe("error keys", () => {
  it("maps API keys onto input names", () => {
    expect(inputNameForErrorKey("scenario.training.global_batch_size")).toBe("training.global_batch_size");
    expect(inputNameForErrorKey("name")).toBe("name");
    expect(inputNameForErrorKey("scenario.model")).toBe("model.preset");
    expect(inputNameForErrorKey("scenario")).toBe("");
    expect(inputNameForErrorKey("scenario.checkpoint.interval_s")).toBe("checkpoint.interval_s");
    expect(inputNameForErrorKey("scenario.strategy.prefetch_depth")).toBe("strategy.prefetch_depth");
    expect(inputNameForErrorKey("scenario.checkpoint")).toBe("checkpoint.target");
    expect(inputNameForErrorKey("")).toBe("");
  });
});

describe("catalog labels", () => {
  it("shows the parameter count when the spec has it, else the shape", () => {
    expect(modelOptionLabel({ slug: "x", name: "Llama-2-70B", spec: { num_params: 68976648192 } })).toBe("Llama-2-70B — 69.0 B params");
    expect(modelOptionLabel({ slug: "x", name: "Llama-2-70B", spec: { num_layers: 80, hidden_size: 8192 } })).toBe("Llama-2-70B — 80 layers, hidden 8192");
  });
  it("shows a node's GPUs and tiers", () => {
    expect(nodeOptionLabel({ slug: "dgx-h100", name: "NVIDIA DGX H100", spec: { gpus_per_node: 8, tiers: { ddr: {}, nvme: {} } } }))
      .toBe("NVIDIA DGX H100 — 8 GPUs, tiers: DDR, NVMe");
    expect(nodeOptionLabel({ slug: "one", name: "Workstation", spec: { gpus_per_node: 1 } })).toBe("Workstation — 1 GPU");
    // GB200 NVL72: the host is a 4-GPU tray inside the rack's 72-GPU NVLink domain
    expect(nodeOptionLabel({ slug: "gb200-nvl72", name: "GB200 tray", spec: { gpus_per_node: 4, nvlink_domain_gpus: 72, tiers: { ddr: {} } } }))
      .toBe("GB200 tray — 4 GPUs, 72-GPU NVLink domain, tiers: DDR");
  });
});

describe("default name", () => {
  const models = [{ slug: "llama2-70b", name: "Llama-2-70B", spec: {} }];
  const nodes = [{ slug: "dgx-h100", name: "NVIDIA DGX H100", spec: { gpus_per_node: 8 } }];

  it("names the model, the node and the strategy by their display names, not their ids", () => {
    expect(suggestName(values, models, nodes)).toBe("Llama-2-70B · 2× NVIDIA DGX H100 · ZeRO-3");
    expect(suggestName({ ...values, "strategy.kind": "fsdp_hybrid_shard" }, models, nodes))
      .toBe("Llama-2-70B · 2× NVIDIA DGX H100 · FSDP HYBRID_SHARD");
    expect(suggestName({ ...values, "strategy.kind": "zero_offload" }, models, nodes)).toMatch(/ · ZeRO-Offload$/);
  });

  it("has a display name for every strategy the form offers", () => {
    for (const [kind, label] of STRATEGIES) {
      expect(STRATEGY_NAMES[kind], kind).toBeDefined();
      expect(label.startsWith(strategyName(kind)), label).toBe(true);
    }
    expect(strategyName("something_new")).toBe("something_new");
  });
});

describe("LoRA implementation and fused RMSNorm (issue #12)", () => {
  it("sends AutoModel's LoRA with its dropout position, and round-trips it", () => {
    const req = buildRequest({
      ...values, "training.lora.rank": "16", "training.lora.dropout": "0.1",
      "training.lora.implementation": "automodel", "training.lora.dropout_position": "post",
    });
    const lora = (req.scenario.training as Record<string, unknown>).lora;
    expect(lora).toEqual({ rank: 16, dropout: 0.1, implementation: "automodel", dropout_position: "post" });
    const back = valuesFromScenario(req.scenario);
    expect(back["training.lora.implementation"]).toBe("automodel");
    expect(back["training.lora.dropout_position"]).toBe("post");
  });
  it("leaves PEFT's defaults out of the request", () => {
    const req = buildRequest({ ...values, "training.lora.rank": "8" });
    expect((req.scenario.training as Record<string, unknown>).lora).toEqual({ rank: 8 });
    expect(req.scenario.training).not.toHaveProperty("fused_norm");
  });
  it("sends fused_mlp_activation as a tri-state switch, and reads it back", () => {
    const req = buildRequest({ ...values, "training.fused_mlp_activation": "true" });
    expect((req.scenario.training as Record<string, unknown>).fused_mlp_activation).toBe(true);
    expect(valuesFromScenario(req.scenario)["training.fused_mlp_activation"]).toBe("true");
    expect(buildRequest(values).scenario.training).not.toHaveProperty("fused_mlp_activation");
  });
  it("sends fused_norm only when on, and reads it back", () => {
    const req = buildRequest({ ...values, "training.fused_norm": true });
    expect((req.scenario.training as Record<string, unknown>).fused_norm).toBe(true);
    expect(valuesFromScenario(req.scenario)["training.fused_norm"]).toBe(true);
  });
});

describe("LoRA inputs (training.lora, issue #14)", () => {
  it("sends no lora section while the rank is blank", () => {
    const req = buildRequest({ ...values, "training.lora.targets": "q, k" });
    expect(req.scenario.training).not.toHaveProperty("lora");
  });

  it("sends rank, alpha, dropout and the typed targets as a list", () => {
    const req = buildRequest({
      ...values, "training.lora.rank": "16", "training.lora.alpha": "32",
      "training.lora.dropout": "0.05", "training.lora.targets": "q, k v,o",
    });
    expect((req.scenario.training as Record<string, unknown>).lora).toEqual({
      rank: 16, alpha: 32, dropout: 0.05, targets: ["q", "k", "v", "o"],
    });
  });

  it("fills the inputs from a scenario and back to the same section", () => {
    const lora = { rank: 8, alpha: 16, targets: ["q", "v"] };
    const v = valuesFromScenario({ schema: 1, model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, training: { lora } });
    expect(v["training.lora.rank"]).toBe("8");
    expect(v["training.lora.targets"]).toBe("q, v");
    expect((buildRequest(v).scenario.training as Record<string, unknown>).lora).toEqual(lora);
    expect(settingsNotOnForm({ schema: 1, model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, training: { lora } })).toEqual([]);
  });

  it("sends the QLoRA inputs: base storage, double quantisation and block size for 4-bit only", () => {
    const req = buildRequest({
      ...values, "training.lora.rank": "64", "training.lora.base_dtype": "nf4",
      "training.lora.double_quant": true, "training.lora.quant_block_size": "128",
      "training.lora.adapter_dtype": "bf16",
    });
    expect((req.scenario.training as Record<string, unknown>).lora).toEqual({
      rank: 64, base_dtype: "nf4", double_quant: true, quant_block_size: 128, adapter_dtype: "bf16",
    });
    const int8 = buildRequest({
      ...values, "training.lora.rank": "8", "training.lora.base_dtype": "int8",
      "training.lora.double_quant": true, "training.lora.quant_block_size": "128",
    });
    // the engine refuses double_quant / quant_block_size for an int8 base: not sent
    expect((int8.scenario.training as Record<string, unknown>).lora).toEqual({ rank: 8, base_dtype: "int8" });
  });

  it("shows an example's QLoRA settings on the form and sends them back unchanged", () => {
    const lora = { rank: 16, targets: ["q", "v"], base_dtype: "nf4", double_quant: true, quant_block_size: 64 };
    const sc = { schema: 1, model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, training: { lora } };
    const v = valuesFromScenario(sc);
    expect(v["training.lora.base_dtype"]).toBe("nf4");
    expect(v["training.lora.double_quant"]).toBe(true);
    expect((buildRequest(v).scenario.training as Record<string, unknown>).lora).toEqual(lora);
    expect(settingsNotOnForm(sc)).toEqual([]);
  });

  it("puts the engine's LoRA errors next to their inputs", () => {
    expect(inputNameForErrorKey("scenario.training.lora.targets[1]")).toBe("training.lora.targets");
    expect(inputNameForErrorKey("scenario.training.lora")).toBe("training.lora.rank");
    expect(inputNameForErrorKey("scenario.training.lora.dropout")).toBe("training.lora.dropout");
  });
});

describe("context parallelism", () => {
  it("sends training.context_parallel when above 1 and reads it back", () => {
    const req = buildRequest({ ...values, "training.context_parallel": "2" }).scenario as ScenarioJSON & Record<string, any>;
    expect(req.training?.context_parallel).toBe(2);
    expect(valuesFromScenario(req)["training.context_parallel"]).toBe("2");
  });

  it("sends the K/V exchange when one is chosen, nothing for the default", () => {
    const req = buildRequest({ ...values, "training.context_parallel": "4",
      "training.context_parallel_comm": "all_gather" }).scenario as ScenarioJSON & Record<string, any>;
    expect(req.training?.context_parallel_comm).toBe("all_gather");
    expect(valuesFromScenario(req)["training.context_parallel_comm"]).toBe("all_gather");
    const plain = buildRequest({ ...values, "training.context_parallel": "4" }).scenario as ScenarioJSON & Record<string, any>;
    expect(plain.training).not.toHaveProperty("context_parallel_comm");
  });

  it("leaves CP 1 (the engine's default) out of the JSON", () => {
    const req = buildRequest(values).scenario as ScenarioJSON & Record<string, any>;
    expect(req.training).not.toHaveProperty("context_parallel");
    expect(valuesFromScenario(req)["training.context_parallel"]).toBe("1");
  });
});

describe("FP8 inputs (training.fp8, issue #15)", () => {
  it("sends no fp8 section while the recipe is blank: the JSON (and its hash) is as before", () => {
    const req = buildRequest({ ...values, "training.fp8.amax_history_len": "16", "training.fp8.param": true });
    expect(req.scenario.training).not.toHaveProperty("fp8");
  });

  it("sends recipe, format, history length and FP8 primary weights", () => {
    const req = buildRequest({
      ...values, "training.fp8.recipe": "delayed", "training.fp8.format": "hybrid",
      "training.fp8.amax_history_len": "16", "training.fp8.param": true,
    });
    expect((req.scenario.training as Record<string, unknown>).fp8).toEqual({
      recipe: "delayed", format: "hybrid", amax_history_len: 16, param: true,
    });
    // the history length is delayed scaling's: another recipe leaves it out
    const cs = buildRequest({ ...values, "training.fp8.recipe": "tensorwise", "training.fp8.amax_history_len": "16" });
    expect((cs.scenario.training as Record<string, unknown>).fp8).toEqual({ recipe: "tensorwise" });
  });

  it("fills the inputs from a scenario and back to the same section", () => {
    const fp8 = { recipe: "delayed", format: "hybrid", amax_history_len: 1024, amax_compute_algo: "max" };
    const sc = { schema: 1, model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, training: { fp8 } };
    const v = valuesFromScenario(sc);
    expect(v["training.fp8.recipe"]).toBe("delayed");
    expect(v["training.fp8.amax_history_len"]).toBe("1024");
    expect((buildRequest(v, sc).scenario.training as Record<string, unknown>).fp8).toEqual(fp8);
    expect(settingsNotOnForm(sc)).toEqual(["training.fp8.amax_compute_algo"]);
    expect(inputNameForErrorKey("scenario.training.fp8")).toBe("training.fp8.recipe");
    expect(inputNameForErrorKey("scenario.training.fp8.format")).toBe("training.fp8.format");
  });
});

describe("recomputation by module and the SwiGLU FP8 input store (issue #15)", () => {
  it("sends recompute_modules as a list of names and the store as true, nothing when blank / off", () => {
    const t = (v: Record<string, string | boolean>) => buildRequest({ ...values, ...v }).scenario.training as Record<string, unknown>;
    expect(t({})).not.toHaveProperty("recompute_modules");
    expect(t({})).not.toHaveProperty("activation_func_fp8_input_store");
    const on = t({ "training.recompute": "selective", "training.recompute_modules": "layernorm, mla_up_proj moe_act",
                   "training.activation_func_fp8_input_store": true });
    expect(on).toMatchObject({ recompute: "selective", recompute_modules: ["layernorm", "mla_up_proj", "moe_act"],
                               activation_func_fp8_input_store: true });
  });

  it("loads them back from a scenario and points the engine's element error at the input", () => {
    const v = valuesFromScenario({ schema: 1, model: { preset: "deepseek-v3" }, cluster: { node: "hgx-h800" },
      training: { recompute: "selective", recompute_modules: ["layernorm", "moe_act"], activation_func_fp8_input_store: true } });
    expect(v["training.recompute_modules"]).toBe("layernorm, moe_act");
    expect(v["training.activation_func_fp8_input_store"]).toBe(true);
    expect(recomputeModules("")).toBeUndefined();
    expect(inputNameForErrorKey("training.recompute_modules[1]")).toBe("training.recompute_modules");
  });
});

describe("preference tuning and layer-selective recomputation (issues #14, #15)", () => {
  it("sends no preference section while the reference is blank, and a DPO one when chosen", () => {
    const t = (v: Record<string, string | boolean>) => buildRequest({ ...values, ...v }).scenario.training as Record<string, unknown>;
    expect(t({})).not.toHaveProperty("preference");
    expect(t({ "training.preference.reference": "adapters_off" }).preference).toEqual({ method: "dpo", reference: "adapters_off" });
  });

  it("sends recompute_layers / recompute_every as whole numbers, nothing when blank", () => {
    const t = buildRequest({ ...values, "training.recompute": "full", "training.recompute_every": "4" }).scenario.training;
    expect(t).toMatchObject({ recompute: "full", recompute_every: 4 });
    expect(t).not.toHaveProperty("recompute_layers");
  });

  it("loads both back from a scenario, with nothing left off the form", () => {
    const sc = { schema: 1, model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" },
                 training: { recompute: "full", recompute_layers: 3, preference: { method: "dpo", reference: "separate" } } };
    const v = valuesFromScenario(sc);
    expect(v["training.recompute_layers"]).toBe("3");
    expect(v["training.preference.reference"]).toBe("separate");
    expect(settingsNotOnForm(sc)).toEqual([]);
    expect(inputNameForErrorKey("scenario.training.preference.reference")).toBe("training.preference.reference");
    expect(inputNameForErrorKey("scenario.training.preference")).toBe("training.preference.reference");
  });
});

describe("a quantised base without a rank (newcomer: nf4 was dropped silently)", () => {
  it("sends the LoRA section with the engine's default rank, and nothing for a 16-bit base", () => {
    const q = buildRequest({ ...values, "training.lora.base_dtype": "nf4" }).scenario.training as Record<string, unknown>;
    expect(q.lora).toEqual({ base_dtype: "nf4" });
    const plain = buildRequest({ ...values, "training.lora.base_dtype": "bf16" }).scenario.training as Record<string, unknown>;
    expect(plain).not.toHaveProperty("lora");
  });
});

describe("model.position_embedding", () => {
  it("offers RoPE, learned and ALiBi; blank keeps the model's own", () => {
    expect(POSITION_EMBEDDINGS.map(([v]) => v)).toEqual(["", "rope", "learned", "alibi"]);
    expect(Object.fromEntries(POSITION_EMBEDDINGS)).toMatchObject(
      { rope: "RoPE (rotary)", learned: "Learned", alibi: "ALiBi (BLOOM, MPT)" });
    expect(buildRequest(values).scenario.model).toEqual({ preset: "llama2-70b" });
    const custom = { model: { name: "bloom-like", num_layers: 24, hidden_size: 1024, position_embedding: "alibi" },
      cluster: { node: "dgx-h100" } } as ScenarioJSON;
    expect(buildRequest({ ...values, "model.preset": "" }, custom).scenario.model)
      .toMatchObject({ position_embedding: "alibi" });
  });
  it("sends ALiBi on a preset and reads it back (save, edit, fork)", () => {
    const r = buildRequest({ ...values, "model.position_embedding": "alibi" });
    expect(r.scenario.model).toEqual({ preset: "llama2-70b", position_embedding: "alibi" });
    const back = valuesFromScenario(r.scenario);
    expect(back["model.position_embedding"]).toBe("alibi");
    expect(back["model.preset"]).toBe("llama2-70b");
    expect(buildRequest({ ...back, name: "x" }).scenario.model).toEqual(r.scenario.model);
    expect(settingsNotOnForm(r.scenario)).not.toContain("model.position_embedding");
    const learned = buildRequest({ ...values, "model.position_embedding": "learned" }).scenario;
    expect(valuesFromScenario(learned)["model.position_embedding"]).toBe("learned");
  });
});
