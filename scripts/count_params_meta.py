"""Count the parameters of Hugging Face causal LMs built on the meta device.

Builds each architecture from transformers' own config and model classes
(``AutoModelForCausalLM.from_config`` inside ``with torch.device("meta")``: every
parameter has its shape and no storage, so a 405B model builds in a second and nothing is
downloaded) and records, per model preset of ``simulation/presets.py``:

- ``total``: ``sum(p.numel() for p in model.parameters())`` (a tied output head is the
  embedding's own Parameter, counted once),
- ``per_layer``: the same over the first decoder block, ``last_layer`` over the last one
  (an expert block where the first ones are dense, DeepSeek),
- ``sliding_layers``: blocks with sliding-window attention (``config.layer_types``'
  "sliding_attention" where the class has it, Gemma 2; else every block when the config
  has a ``sliding_window``, Mistral),
- ``per_layer_tensors``: the first block's parameter tensors (each its own gradient),
- ``embedding``: the input embedding's elements,
- ``largest_module``: the biggest single parameter tensor,
- ``config``: the keyword arguments given to the config class, copied from the model's
  published ``config.json`` (the ``url`` of each); keys that change no parameter shape
  (rope scaling, eps, dtypes, token ids) are left out.

It is a tool, not a test: ``tests/engine/test_params_meta.py`` reads the JSON it writes
(``tests/data/param_counts_hf.json``) and never runs it. It needs torch and a
transformers recent enough for the classes used (Qwen2, Gemma 2 and Mistral need 4.42
or later), which tierlab does not depend on; install them apart, e.g.::

    python3 -m venv ~/torch-env && ~/torch-env/bin/pip install torch transformers
    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/count_params_meta.py \\
        --out tests/data/param_counts_hf.json
    HF_HUB_OFFLINE=1 ~/torch-env/bin/python scripts/count_params_meta.py \\
        --set bloom --out tests/data/param_counts_hf_bloom.json

``--set bloom`` counts BLOOM models (``BloomForCausalLM``, which transformers 4.31 has;
recorded with 4.31.0), keyed by ``name`` since no preset is BLOOM.
"""

from __future__ import annotations

import argparse
import json
import os
import platform

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

HF = "https://huggingface.co/{}/blob/main/config.json"

# preset slug -> (config class, repository on the Hub, config.json fields that set shapes)
ARCHITECTURES: dict[str, tuple[str, str, dict]] = {
    "llama2-7b": ("LlamaConfig", "meta-llama/Llama-2-7b-hf", dict(
        hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=32000, tie_word_embeddings=False)),
    "llama3.1-8b": ("LlamaConfig", "meta-llama/Llama-3.1-8B", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False)),
    "llama3.1-70b": ("LlamaConfig", "meta-llama/Llama-3.1-70B", dict(
        hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False)),
    "llama3.1-405b": ("LlamaConfig", "meta-llama/Llama-3.1-405B", dict(
        hidden_size=16384, intermediate_size=53248, num_hidden_layers=126, num_attention_heads=128,
        num_key_value_heads=8, vocab_size=128256, tie_word_embeddings=False)),
    "llama3.2-1b": ("LlamaConfig", "meta-llama/Llama-3.2-1B", dict(
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
        num_key_value_heads=8, head_dim=64, vocab_size=128256, tie_word_embeddings=True)),
    "llama3.2-3b": ("LlamaConfig", "meta-llama/Llama-3.2-3B", dict(
        hidden_size=3072, intermediate_size=8192, num_hidden_layers=28, num_attention_heads=24,
        num_key_value_heads=8, head_dim=128, vocab_size=128256, tie_word_embeddings=True)),
    "qwen2.5-0.5b": ("Qwen2Config", "Qwen/Qwen2.5-0.5B", dict(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)),
    "qwen2.5-1.5b": ("Qwen2Config", "Qwen/Qwen2.5-1.5B", dict(
        hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
        num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)),
    "qwen2.5-3b": ("Qwen2Config", "Qwen/Qwen2.5-3B", dict(
        hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
        num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)),
    "qwen2.5-7b": ("Qwen2Config", "Qwen/Qwen2.5-7B", dict(
        hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False)),
    "qwen2.5-14b": ("Qwen2Config", "Qwen/Qwen2.5-14B", dict(
        hidden_size=5120, intermediate_size=13824, num_hidden_layers=48, num_attention_heads=40,
        num_key_value_heads=8, vocab_size=152064, tie_word_embeddings=False)),
    "qwen2.5-32b": ("Qwen2Config", "Qwen/Qwen2.5-32B", dict(
        hidden_size=5120, intermediate_size=27648, num_hidden_layers=64, num_attention_heads=40,
        num_key_value_heads=8, vocab_size=152064, tie_word_embeddings=False)),
    "qwen2.5-72b": ("Qwen2Config", "Qwen/Qwen2.5-72B", dict(
        hidden_size=8192, intermediate_size=29568, num_hidden_layers=80, num_attention_heads=64,
        num_key_value_heads=8, vocab_size=152064, tie_word_embeddings=False)),
    "mistral-7b": ("MistralConfig", "mistralai/Mistral-7B-v0.1", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, tie_word_embeddings=False, sliding_window=4096)),
    "mixtral-8x7b": ("MixtralConfig", "mistralai/Mixtral-8x7B-v0.1", dict(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=32000, num_local_experts=8, num_experts_per_tok=2,
        tie_word_embeddings=False)),
    "mixtral-8x22b": ("MixtralConfig", "mistralai/Mixtral-8x22B-v0.1", dict(
        hidden_size=6144, intermediate_size=16384, num_hidden_layers=56, num_attention_heads=48,
        num_key_value_heads=8, vocab_size=32000, num_local_experts=8, num_experts_per_tok=2,
        tie_word_embeddings=False)),
    "phi3-mini": ("Phi3Config", "microsoft/Phi-3-mini-4k-instruct", dict(
        hidden_size=3072, intermediate_size=8192, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, vocab_size=32064, tie_word_embeddings=False)),
    "phi4": ("Phi3Config", "microsoft/phi-4", dict(
        hidden_size=5120, intermediate_size=17920, num_hidden_layers=40, num_attention_heads=40,
        num_key_value_heads=10, vocab_size=100352, tie_word_embeddings=False, pad_token_id=100349)),
    "gemma-7b": ("GemmaConfig", "google/gemma-7b", dict(
        hidden_size=3072, intermediate_size=24576, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=16, head_dim=256, vocab_size=256000)),
    "gemma2-9b": ("Gemma2Config", "google/gemma-2-9b", dict(
        hidden_size=3584, intermediate_size=14336, num_hidden_layers=42, num_attention_heads=16,
        num_key_value_heads=8, head_dim=256, vocab_size=256000, sliding_window=4096)),
    "gemma2-27b": ("Gemma2Config", "google/gemma-2-27b", dict(
        hidden_size=4608, intermediate_size=36864, num_hidden_layers=46, num_attention_heads=32,
        num_key_value_heads=16, head_dim=128, vocab_size=256000, sliding_window=4096)),
    "falcon-7b": ("FalconConfig", "tiiuae/falcon-7b", dict(
        hidden_size=4544, num_hidden_layers=32, num_attention_heads=71, vocab_size=65024,
        multi_query=True, parallel_attn=True, bias=False, new_decoder_architecture=False)),
    # DeepSeek (transformers >= 4.57 DeepseekV2/V3): routed + shared experts, dense first
    # blocks, multi-head latent attention. transformers' DeepseekV3ForCausalLM leaves the
    # multi-token-prediction module out (num_nextn_predict_layers is not read: the
    # checkpoint's layer 61 is not loaded), as does this count.
    "deepseek-v3": ("DeepseekV3Config", "deepseek-ai/DeepSeek-V3", dict(
        hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
        num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128,
        n_shared_experts=1, n_routed_experts=256, num_experts_per_tok=8, first_k_dense_replace=3,
        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, vocab_size=129280, tie_word_embeddings=False)),
    "deepseek-v2-lite": ("DeepseekV2Config", "deepseek-ai/DeepSeek-V2-Lite", dict(
        hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
        num_hidden_layers=27, num_attention_heads=16, num_key_value_heads=16,
        n_shared_experts=2, n_routed_experts=64, num_experts_per_tok=6, first_k_dense_replace=1,
        q_lora_rank=None, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, vocab_size=102400, tie_word_embeddings=False)),
}


# ``--set bloom`` (tests/data/param_counts_hf_bloom.json): BLOOM, which no preset is; name ->
# (config class, repository, config.json fields that set shapes). BloomConfig reads n_layer
# and n_head (its attribute_map: num_hidden_layers, num_attention_heads); tie_word_embeddings
# is the default, True. bigscience/bloom's config.json: n_embed 14336, n_layer 70,
# num_attention_heads 112 (the 176B model of the validation case
# tests/data/reference/bloom_176b_2022.json).
BLOOM: dict[str, tuple[str, str, dict]] = {
    "bloom-560m": ("BloomConfig", "bigscience/bloom-560m", dict(
        hidden_size=1024, n_layer=24, n_head=16, vocab_size=250880)),
    "bloom-176b": ("BloomConfig", "bigscience/bloom", dict(
        hidden_size=14336, n_layer=70, n_head=112, vocab_size=250880)),
}


def count(cls_name: str, kwargs: dict) -> dict:
    cfg = getattr(transformers, cls_name)(**kwargs)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    params = list(model.parameters())                       # deduplicated: tied once
    # BloomForCausalLM has no get_decoder in transformers 4.31; its blocks are transformer.h
    dec = model.get_decoder() if hasattr(model, "get_decoder") else None
    block = dec.layers if hasattr(dec, "layers") else model.transformer.h
    layer_types = getattr(cfg, "layer_types", None)
    if layer_types:
        sliding = sum(t == "sliding_attention" for t in layer_types)
    else:
        sliding = len(block) if getattr(cfg, "sliding_window", None) else 0
    return dict(total=sum(p.numel() for p in params),
                per_layer=sum(p.numel() for p in block[0].parameters()),
                last_layer=sum(p.numel() for p in block[-1].parameters()),
                sliding_layers=sliding,
                per_layer_tensors=len(list(block[0].parameters())),
                embedding=model.get_input_embeddings().weight.numel(),
                largest_module=max(p.numel() for p in params),
                model_class=type(model).__name__,
                tied=model.get_output_embeddings().weight is model.get_input_embeddings().weight)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--set", choices=("presets", "bloom"), default="presets",
                    help="presets: the model presets; bloom: BLOOM models (no preset; name, not preset)")
    a = ap.parse_args()
    cases = []
    key, models = ("name", BLOOM) if a.set == "bloom" else ("preset", ARCHITECTURES)
    for slug, (cls_name, repo, kwargs) in models.items():
        cases.append({key: slug, "config_class": cls_name, "url": HF.format(repo), "config": kwargs,
                      **count(cls_name, kwargs)})
    data = {"what": "parameter counts of transformers' causal LMs built on the meta device; "
                    "see scripts/count_params_meta.py",
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                         "python": platform.python_version()},
            "cases": cases}
    with open(a.out, "w") as f:
        f.write("{" + json.dumps({k: v for k, v in data.items() if k != "cases"})[1:-1] + ', "cases": [\n')
        f.write(",\n".join(" " + json.dumps(c) for c in cases) + "]}\n")


if __name__ == "__main__":
    main()
