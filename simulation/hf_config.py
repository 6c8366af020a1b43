"""A Hugging Face ``config.json`` as the scenario's model section.

:func:`model_from_hf_config` reads the dict a model's ``config.json`` holds (pasted or
uploaded; nothing is fetched from the Hub) and returns the ``model`` section of a scenario
in tierlab's own vocabulary, the config keys it did not use, and notes on what the engine
models differently. Keys are read per ``model_type`` as transformers' own config and
modeling classes read them (transformers 4.57, ``src/transformers/models/<type>/``):

================================  =================================================
config.json                       model section
================================  =================================================
num_hidden_layers                 num_layers
hidden_size                       hidden_size
num_attention_heads               num_attention_heads
num_key_value_heads               num_kv_heads (absent: = heads, as every config class)
intermediate_size                 ffn_hidden_size (Falcon: ffn_hidden_size, else 4 h)
vocab_size                        vocab_size
head_dim                          head_dim (absent: hidden_size / heads)
tie_word_embeddings               tied_embeddings (absent: the class default)
max_position_embeddings           max_seq_len (absent: the class default)
rms_norm_eps / layer_norm_epsilon norm rmsnorm / layernorm
hidden_act / hidden_activation    gated_mlp (a gated MLP for the Llama-style families)
attention_bias, mlp_bias          qkv_bias / linear_bias (Llama, Mistral, Gemma)
num_local_experts                 num_experts (Mixtral)
n_routed_experts                  num_experts (DeepSeek)
num_experts_per_tok               moe_top_k (Mixtral, DeepSeek)
moe_intermediate_size             moe_ffn_hidden_size (DeepSeek)
n_shared_experts                  num_shared_experts (DeepSeek; null: 0)
first_k_dense_replace             first_dense_layers (DeepSeek)
q_lora_rank, kv_lora_rank,        the same names (DeepSeek's multi-head latent
qk_nope/rope_head_dim, v_head_dim attention; q_lora_rank null: no q compression)
sliding_window                    sliding_window, sliding_window_layers "all"
                                  (Mistral, Mixtral, Phi-3) or "alternate" (Gemma 2)
multi_query, new_decoder_arch...  num_kv_heads, norms_per_block (Falcon)
attention_dropout, resid_pdrop,   attention_dropout / hidden_dropout (true only when
hidden_dropout                    the probability is above 0)
attn_logit_softcapping,           the same names (Gemma 2; absent: 50.0 and 30.0, the
final_logit_softcapping           class defaults; null: no cap)
model_type                        layer_family (gemma, gemma2, phi3, falcon, bloom: the
                                  layers that save what Llama's do not, activations.py)
n_layer, n_head, n_embed          num_layers, heads, hidden_size (BLOOM's own names)
activation                        Falcon's MLP activation (a single op: gelu, relu, ...)
================================  =================================================

Per family (the modeling file each follows):

- ``llama``, ``mistral``: ``LlamaDecoderLayer`` / ``MistralDecoderLayer``: RoPE, two
  RMSNorms per block, SwiGLU (gate, up, down), separate q/k/v projections.
- ``mixtral``: Mistral's attention with ``num_local_experts`` SwiGLU experts and a router.
- ``qwen2``: ``Qwen2Attention`` puts biases on q, k and v (``bias=True``), o without: qkv_bias.
- ``gemma``: GeGLU, ``head_dim`` apart from hidden / heads, embeddings tied by default.
- ``gemma2``: Gemma's plus post-attention and post-feed-forward norms: 4 per block.
- ``phi3``: ``Phi3Attention.qkv_proj`` and ``Phi3MLP.gate_up_proj``: fused projections.
- ``mistral``, ``mixtral``, ``phi3``: ``sliding_window`` (null: none) in every layer
  (``MistralAttention`` / ``MixtralAttention`` / ``Phi3Attention`` pass
  ``config.sliding_window`` to the attention function of each layer).
- ``gemma2``: ``sliding_window`` (class default 4096) in layers 0, 2, 4, ...
  (``Gemma2Config.layer_types``: sliding where ``(i + 1) % 2``); a ``layer_types`` list of
  any other pattern is refused.
- ``qwen2``: ``use_sliding_window`` false (every published Qwen2.5 config) is full
  attention; true slides layers from ``max_window_layers`` on, which the model section
  cannot hold: a note, counted as full attention.
- ``deepseek_v3``, ``deepseek_v2``: ``DeepseekV3DecoderLayer`` / ``DeepseekV2DecoderLayer``:
  multi-head latent attention (``DeepseekV3Attention``), a dense SwiGLU MLP of
  ``intermediate_size`` in blocks below ``first_k_dense_replace``, then ``n_routed_experts``
  experts of ``moe_intermediate_size`` (top ``num_experts_per_tok``) plus one shared MLP of
  ``n_shared_experts x moe_intermediate_size``; absent keys take the config class's
  defaults. ``moe_layer_freq`` is not read by transformers' classes (every block from
  ``first_k_dense_replace`` on has experts): a value other than 1 gets a note.
  ``num_nextn_predict_layers`` (the multi-token-prediction module) builds nothing in
  transformers' model and is not counted: a note. ``attention_bias`` / ``mlp_bias`` true
  are refused (latent-attention biases are not modelled).
- ``falcon``: ``FalconDecoderLayer``: LayerNorm, a 4 h GELU MLP (not gated), q/k/v fused in
  ``query_key_value``; one ``input_layernorm`` when ``parallel_attn`` and not
  ``new_decoder_architecture``, ``ln_attn`` and ``ln_mlp`` with the new architecture
  (``num_ln_in_parallel_attn`` 2), input and post-attention norms otherwise; ``multi_query``
  is 1 KV head, the new architecture reads ``num_kv_heads``; ``bias`` is every linear's.

- ``bloom``: ``BloomBlock``: ALiBi (``position_embedding`` alibi; BloomConfig has no
  ``max_position_embeddings``, so no ``max_seq_len``), two LayerNorms a block, fused
  ``query_key_value`` (heads K/V heads), a 4 h ``BloomGelu`` MLP (not gated), a bias on every
  Linear, embeddings tied by default, and ``BloomModel.word_embeddings_layernorm`` (a
  LayerNorm on the token embeddings: 2 h parameters, counted for ``layer_family`` bloom).
  ``apply_residual_connection_post_layernorm`` and ``slow_but_exact`` change neither memory
  nor parameters: read and noted (:func:`_bloom`).

Errors: a bad value raises :class:`ScenarioError` naming the config key
(``config.num_attention_heads``), several bad keys :class:`ScenarioErrors` naming each (every
key is read before any is reported); a ``model_type`` outside those above names
``config.model_type`` alone (the family says which keys are read). The returned section is
checked by ``ModelSpec.from_dict``; an error there is reported under the config key it came
from.
"""

from __future__ import annotations

from .activations import FAMILY_TRAITS
from .errors import Collect, ScenarioError
from .fields import show

PATH = "config"
MODEL_TYPES = ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "falcon",
               "deepseek_v3", "deepseek_v2", "bloom")

# Per family: defaults of transformers' config class for keys a config.json may leave
# out (``<Type>Config.__init__``), and the architecture its modeling file fixes.
_FAMILY = {
    "llama": dict(tie=False, ctx=2048, norm="rmsnorm", gated=True),
    "mistral": dict(tie=False, ctx=4096 * 32, norm="rmsnorm", gated=True),
    "mixtral": dict(tie=False, ctx=4096 * 32, norm="rmsnorm", gated=True),
    "qwen2": dict(tie=False, ctx=32768, norm="rmsnorm", gated=True, qkv_bias=True),
    "gemma": dict(tie=True, ctx=8192, norm="rmsnorm", gated=True),
    "gemma2": dict(tie=True, ctx=8192, norm="rmsnorm", gated=True, norms_per_block=4),
    "phi3": dict(tie=False, ctx=4096, norm="rmsnorm", gated=True, fused_projections=True),
    "falcon": dict(tie=True, ctx=2048, norm="layernorm", gated=False),
    "deepseek_v3": dict(tie=False, ctx=4096, norm="rmsnorm", gated=True),
    "deepseek_v2": dict(tie=False, ctx=2048, norm="rmsnorm", gated=True),
    # BloomConfig: no max_position_embeddings (ALiBi has no table); tie_word_embeddings is
    # PretrainedConfig's default, True
    "bloom": dict(tie=True, ctx=None, norm="layernorm", gated=False),
}
# BloomConfig.attribute_map (transformers 4.31 configuration_bloom.py): the generic names a
# BLOOM config.json may use instead of its own, and ``n_embed``, which
# ``BloomConfig.__init__`` takes for hidden_size when given (bigscience/bloom's config.json
# has n_embed and num_attention_heads, bloom-560m's hidden_size and n_head).
_BLOOM_NAMES = {"num_hidden_layers": "n_layer", "num_attention_heads": "n_head",
                "hidden_size": "n_embed"}
# DeepseekV3Config / DeepseekV2Config defaults (transformers 4.57) of the keys that set
# shapes: (moe_intermediate_size, n_routed_experts, n_shared_experts, first_k_dense_replace,
# q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim)
_DEEPSEEK_DEFAULTS = {
    "deepseek_v3": dict(moe_intermediate_size=2048, n_routed_experts=256, n_shared_experts=1,
                        first_k_dense_replace=3, num_experts_per_tok=8, q_lora_rank=1536,
                        kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
    "deepseek_v2": dict(moe_intermediate_size=1407, n_routed_experts=64, n_shared_experts=2,
                        first_k_dense_replace=0, num_experts_per_tok=None, q_lora_rank=1536,
                        kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
}
# Families whose attention reads config.sliding_window in every layer.
_SLIDING_ALL = ("mistral", "mixtral", "phi3")
# Activations transformers' ACT2FN knows that these families' gated MLPs use.
_ACTS = ("silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new", "gelu_fast", "relu")

# Falcon's activations that keep only their input (ACT2FN: GELUActivation, the tanh GELU,
# ReLU, SiLU), as the engine counts Falcon's MLP.
_FALCON_ACTS = ("gelu", "gelu_pytorch_tanh", "relu", "silu")

# Keys read for their meaning but that set nothing beyond what the family fixes.
_CONFIRMING = ("model_type", "rms_norm_eps", "layer_norm_epsilon")
# Keys the engine does not model that change memory or time; each gets a note.
_NOTES = {
    "rope_scaling": "RoPE scaling changes no parameter or activation size",
    "attn_logit_softcapping": "logit soft-capping adds an element-wise op the engine does not time",
    "final_logit_softcapping": "logit soft-capping adds an element-wise op the engine does not time",
}
# Gemma2Config's soft-capping defaults (transformers 5.24 configuration_gemma2.py): the keys
# are read for Gemma 2 only (the other families' classes do not read them).
_SOFTCAP_DEFAULTS = {"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0}


def _err(key: str, message: str) -> ScenarioError:
    return ScenarioError(f"{PATH}.{key}", message)


def _int(cfg: dict, key: str, default=None, minimum: int = 1, maximum: int = 100_000_000):
    v = cfg.get(key, default)
    if v is None:
        if default is None:
            raise _err(key, "is required")
        return default
    if type(v) is not int:
        raise _err(key, f"must be a whole number, got {show(v)}")
    if not minimum <= v <= maximum:
        raise _err(key, f"must be between {minimum:,} and {maximum:,}, got {v:,}")
    return v


def _bool(cfg: dict, key: str, default: bool) -> bool:
    v = cfg.get(key, default)
    if v is None:
        return default
    if v is not True and v is not False:
        raise _err(key, f"must be true or false, got {show(v)}")
    return v


def _prob(cfg: dict, key: str) -> float:
    v = cfg.get(key, 0.0)
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
        raise _err(key, f"must be a probability between 0 and 1, got {show(v)}")
    return float(v)


def _name(cfg: dict, model_type: str) -> str:
    path = cfg.get("_name_or_path")
    if isinstance(path, str) and path.strip():
        return path.strip().rstrip("/").rsplit("/", 1)[-1][:200]
    arch = cfg.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str):
        return arch[0][:200]
    return f"{model_type} (config.json)"


def model_from_hf_config(cfg: dict) -> tuple[dict, list[str], list[str]]:
    """``(model_section, ignored, notes)`` for a Hugging Face ``config.json`` dict.

    ``model_section``: the scenario's ``model`` dict (explicit architecture, no preset),
    which ``ModelSpec.from_dict`` accepts. ``ignored``: the config's keys that set nothing
    in it, sorted. ``notes``: sentences on keys the engine treats differently (sliding
    window, soft-capping, an output-projection bias it cannot hold).

    Raises :class:`ScenarioError` naming ``config.<key>`` for a bad or missing value, or
    ``config.model_type`` for a family it does not read; :class:`ScenarioErrors` naming
    each when several keys are bad (every key is read; a check that needs a bad key's
    value is left out, as a consequence of it).
    """
    if not isinstance(cfg, dict):
        raise ScenarioError(PATH, f"must be a JSON object (the config.json), got {show(cfg)}")
    mt = cfg.get("model_type")
    if mt is None:
        raise _err("model_type", f"is required (one of {', '.join(MODEL_TYPES)})")
    if not isinstance(mt, str) or mt not in _FAMILY:
        raise _err("model_type", f"must be one of {', '.join(MODEL_TYPES)}, got {show(mt)}")
    fam = _FAMILY[mt]
    used = set(_CONFIRMING)
    notes: list[str] = []
    bad = Collect()                  # every bad key at once; None where a key was bad

    def take(*keys):
        used.update(keys)

    def fail(key: str, message: str) -> None:
        bad.errors.append(_err(key, message))

    take("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size",
         "tie_word_embeddings")
    if mt != "bloom":                # BloomConfig has no max_position_embeddings (ALiBi)
        take("max_position_embeddings")
    key = _bloom_keys(cfg, take, fail) if mt == "bloom" else {}
    hidden = bad(_int, cfg, key.get("hidden_size", "hidden_size"), maximum=1_000_000)
    heads = bad(_int, cfg, key.get("num_attention_heads", "num_attention_heads"), maximum=100_000)
    m = dict(name=_name(cfg, mt),
             num_layers=bad(_int, cfg, key.get("num_hidden_layers", "num_hidden_layers"), maximum=10_000),
             hidden_size=hidden, num_attention_heads=heads)

    if mt == "falcon":
        take("multi_query", "new_decoder_architecture", "parallel_attn", "ffn_hidden_size",
             "bias", "alibi", "activation")
        # FalconMLP: get_activation(config.activation), "gelu" by default (nn.GELU-like, one
        # op keeping its input: simulation/activations.py single_op_activation)
        act = cfg.get("activation", "gelu")
        if act is not None and act not in _FALCON_ACTS:
            fail("activation", f"must be one of {', '.join(_FALCON_ACTS)} (a single-op "
                               f"activation: the engine counts its input only), got {show(act)}")
        if bad(_bool, cfg, "alibi", False):
            fail("alibi", "must be false: Falcon's ALiBi layers (FalconAttention's alibi "
                          "path) are not modelled; for Megatron-DeepSpeed / BLOOM-style ALiBi "
                          "set model.position_embedding to \"alibi\" by hand")
        new_arch = bad(_bool, cfg, "new_decoder_architecture", False)
        parallel = bad(_bool, cfg, "parallel_attn", True)
        parallel = True if parallel is None else parallel
        # FalconAttention: num_kv_heads if new_decoder_architecture or not multi_query, else 1
        multi_query = bad(_bool, cfg, "multi_query", True)
        multi_query = True if multi_query is None else multi_query
        if new_arch or not multi_query:
            take("num_kv_heads")
        kv = bad(_int, cfg, "num_kv_heads", heads or 1) if new_arch or not multi_query else 1
        # FalconDecoderLayer: ln_attn + ln_mlp when the new architecture has 2 (its default),
        # else input_layernorm, plus post_attention_layernorm when not parallel_attn
        if new_arch:
            take("num_ln_in_parallel_attn")
        two_ln = bool(new_arch) and bad(_int, cfg, "num_ln_in_parallel_attn", 2, maximum=2) == 2
        norms = 2 if two_ln or not parallel else 1
        m["num_kv_heads"] = kv
        m["ffn_hidden_size"] = bad(_int, cfg, "ffn_hidden_size", 4 * (hidden or 1), maximum=10_000_000)
        bias = bool(bad(_bool, cfg, "bias", False))
    elif mt == "bloom":
        _bloom(cfg, m, take, notes, bad)
        norms, bias = None, True     # every BloomBlock Linear has a bias
    else:
        take("num_key_value_heads", "intermediate_size", "head_dim", "hidden_act",
             "hidden_activation")
        if mt != "qwen2":            # Qwen2Attention's biases are fixed (q/k/v yes, o no)
            take("attention_bias", "mlp_bias")
        m["num_kv_heads"] = bad(_int, cfg, "num_key_value_heads", heads or 1, maximum=100_000)
        m["ffn_hidden_size"] = bad(_int, cfg, "intermediate_size", maximum=10_000_000)
        for key in ("hidden_act", "hidden_activation"):
            act = cfg.get(key)
            if act is not None and act not in _ACTS:
                fail(key, f"must be one of {', '.join(_ACTS)} (the MLP is gated "
                          f"{'GeGLU' if mt.startswith('gemma') else 'SwiGLU'}), got {show(act)}")
        norms = fam.get("norms_per_block")
        attn_bias = mt != "qwen2" and bool(bad(_bool, cfg, "attention_bias", False))
        mlp_bias = mt != "qwen2" and bool(bad(_bool, cfg, "mlp_bias", False))
        if mt == "phi3" and attn_bias:
            fail("attention_bias", "must be false: Phi3Attention's qkv_proj and o_proj carry no bias")
        bias = mlp_bias
        if mlp_bias and not attn_bias:
            m["qkv_bias"] = False
            notes.append("mlp_bias without attention_bias: counted with linear_bias on the MLP "
                         "and o projection (hidden_size elements per layer too many)")
        if attn_bias and not mlp_bias:
            m["qkv_bias"] = True
            notes.append("attention_bias also puts a bias on o_proj (hidden_size elements per "
                         "layer), which the model section cannot hold: counted without it")
        if mt == "mixtral":
            take("num_local_experts", "num_experts_per_tok")
            m["num_experts"] = bad(_int, cfg, "num_local_experts", 8, maximum=1_000_000)
            m["moe_top_k"] = bad(_int, cfg, "num_experts_per_tok", 2, maximum=1_000_000)
            if m["moe_top_k"] and m["num_experts"] and m["moe_top_k"] > m["num_experts"]:
                fail("num_experts_per_tok",
                     f"must be <= num_local_experts ({m['num_experts']}), got {m['moe_top_k']}")
        if mt.startswith("deepseek"):
            _deepseek(cfg, mt, m, take, notes, bad)
            if attn_bias or mlp_bias:
                fail("attention_bias" if attn_bias else "mlp_bias",
                     "must be false: biases of the latent-attention projections are not modelled")
        head_dim = cfg.get("head_dim")
        if mt.startswith("deepseek"):
            pass                     # MLA sets its own head widths; DeepseekV2's head_dim is unused
        elif head_dim is not None or mt in ("gemma", "gemma2"):
            m["head_dim"] = bad(_int, cfg, "head_dim", 256 if mt.startswith("gemma") else None,
                                maximum=100_000)
    m["vocab_size"] = bad(_int, cfg, "vocab_size", maximum=100_000_000)
    tied = bad(_bool, cfg, "tie_word_embeddings", fam["tie"])
    m.update(gated_mlp=fam["gated"], tied_embeddings=fam["tie"] if tied is None else tied,
             position_embedding="alibi" if mt == "bloom" else "rope", norm=fam["norm"], linear_bias=bias)
    if fam.get("qkv_bias"):
        m["qkv_bias"] = True
    if norms not in (None, 2):
        m["norms_per_block"] = norms
    if fam.get("fused_projections"):
        m["fused_projections"] = True

    # Dropout: a probability above 0 turns the term on (transformers' attention_dropout;
    # Phi-3's resid_pdrop and embd_pdrop, Falcon's hidden_dropout on the residual branches).
    take("attention_dropout", "resid_pdrop", "hidden_dropout", "embd_pdrop")
    attn_p = bad(_prob, cfg, "attention_dropout") or 0.0
    hidden_p = max(bad(_prob, cfg, "resid_pdrop") or 0.0, bad(_prob, cfg, "hidden_dropout") or 0.0)
    bad(_prob, cfg, "embd_pdrop")
    m["dropout"] = False
    if attn_p > 0:
        m["attention_dropout"] = True
    if hidden_p > 0:
        m["hidden_dropout"] = True
    if fam["ctx"] is not None:       # BLOOM: ALiBi, no context length in the config
        m["max_seq_len"] = bad(_int, cfg, "max_position_embeddings", fam["ctx"], maximum=100_000_000)
    m["source"] = f"imported config.json (model_type {mt})"
    if mt in FAMILY_TRAITS:          # the families whose layers save what Llama's do not
        m["layer_family"] = mt
    if mt == "gemma2":
        # Gemma2Attention passes config.attn_logit_softcapping to the attention function;
        # Gemma2ForCausalLM.forward caps the logits with config.final_logit_softcapping
        take(*_SOFTCAP_DEFAULTS)
        for key, default in _SOFTCAP_DEFAULTS.items():
            if key not in cfg or cfg[key] is not None:
                v = cfg.get(key, default)
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                    fail(key, f"must be a number > 0 or null, got {show(v)}")
                else:
                    m[key] = float(v)

    _sliding(cfg, mt, m, take, notes, bad)
    for key, note in _NOTES.items():
        if cfg.get(key) is not None:
            notes.append(f"{key}: {note}")
    _check(m, bad)
    bad.check()
    ignored = sorted(k for k in cfg if k not in used)
    return m, ignored, notes


def _bloom_keys(cfg: dict, take, fail) -> dict:
    """The config key each of layers, hidden size and heads is read from in a BLOOM
    config.json (:data:`_BLOOM_NAMES`): BloomConfig's own name when only it is there, else
    the generic one; both with different values are refused (``PretrainedConfig`` would set
    one over the other)."""
    out = {}
    for generic, own in _BLOOM_NAMES.items():
        take(own)
        if own in cfg and generic in cfg and cfg[own] != cfg[generic]:
            fail(own, f"must equal {generic} ({show(cfg[generic])}) when both are given, "
                      f"got {show(cfg[own])}")
        out[generic] = own if own in cfg and generic not in cfg else generic
    return out


def _bloom(cfg: dict, m: dict, take, notes: list, bad: Collect) -> None:
    """BLOOM's block into ``m`` (transformers 4.31 bloom/modeling_bloom.py ``BloomBlock``,
    ``BloomAttention``, ``BloomMLP``; configuration_bloom.py ``BloomConfig``).

    One ``query_key_value`` Linear h -> 3h with a bias (as many K/V heads as heads),
    ``dense`` h -> h, ``dense_h_to_4h`` and ``dense_4h_to_h`` (always 4 h: BloomConfig has
    no intermediate size; ``n_inner`` in published configs is a Megatron leftover that
    BloomMLP does not read), all with biases; two LayerNorms a block, ``BloomGelu`` (not
    gated). ``apply_residual_connection_post_layernorm`` takes the residual after the norm
    instead of before it: the block keeps the same tensors (measured,
    tests/data/saved_tensors_hf_bloom.json) and has the same parameters, so it is read and
    noted. ``slow_but_exact`` with ``pretraining_tp`` above 1 runs ``dense`` and
    ``dense_4h_to_h`` as ``pretraining_tp`` sliced matmuls (their input is one tensor, the
    slices its views: the same saved bytes, measured) and skips those two biases in the
    forward (the parameters still exist): noted, timed as one GEMM each.
    """
    take("apply_residual_connection_post_layernorm", "slow_but_exact", "pretraining_tp")
    m["num_kv_heads"] = m["num_attention_heads"]
    m["ffn_hidden_size"] = 4 * m["hidden_size"] if m["hidden_size"] is not None else None
    if bad(_bool, cfg, "apply_residual_connection_post_layernorm", False):
        notes.append("apply_residual_connection_post_layernorm: the residual is the norm's "
                     "output; the block keeps the same tensors and has the same parameters")
    tp = bad(_int, cfg, "pretraining_tp", 1, maximum=1_000_000)
    if bad(_bool, cfg, "slow_but_exact", False) and tp is not None and tp > 1:
        notes.append(f"slow_but_exact with pretraining_tp {tp}: BloomAttention.dense and "
                     f"BloomMLP.dense_4h_to_h run as {tp} sliced matmuls without their biases; "
                     "memory is the same, the time is counted as one GEMM each")


def _deepseek(cfg: dict, mt: str, m: dict, take, notes: list, bad: Collect) -> None:
    """DeepSeek's experts and latent attention into ``m`` (see the module docstring)."""
    dflt = _DEEPSEEK_DEFAULTS[mt]
    take(*dflt, "moe_layer_freq", "num_nextn_predict_layers")
    m["num_experts"] = bad(_int, cfg, "n_routed_experts", dflt["n_routed_experts"], maximum=1_000_000)
    m["moe_top_k"] = bad(_int, cfg, "num_experts_per_tok", dflt["num_experts_per_tok"], maximum=1_000_000)
    if m["moe_top_k"] and m["num_experts"] and m["moe_top_k"] > m["num_experts"]:
        bad.errors.append(_err("num_experts_per_tok",
                               f"must be <= n_routed_experts ({m['num_experts']}), got {m['moe_top_k']}"))
    m["moe_ffn_hidden_size"] = bad(_int, cfg, "moe_intermediate_size", dflt["moe_intermediate_size"],
                                   maximum=10_000_000)
    # DeepseekV2MoE / DeepseekV3MoE: no shared MLP when n_shared_experts is null
    if not ("n_shared_experts" in cfg and cfg["n_shared_experts"] is None):
        shared = bad(_int, cfg, "n_shared_experts", dflt["n_shared_experts"], minimum=0, maximum=1_000_000)
        if shared:
            m["num_shared_experts"] = shared
    dense = bad(_int, cfg, "first_k_dense_replace", dflt["first_k_dense_replace"], minimum=0, maximum=10_000)
    if dense:
        m["first_dense_layers"] = dense
    # q_lora_rank null: one q_proj (DeepSeek-V2-Lite); absent: the class default
    if "q_lora_rank" not in cfg or cfg["q_lora_rank"] is not None:
        m["q_lora_rank"] = bad(_int, cfg, "q_lora_rank", dflt["q_lora_rank"], maximum=1_000_000)
    m["kv_lora_rank"] = bad(_int, cfg, "kv_lora_rank", dflt["kv_lora_rank"], maximum=1_000_000)
    m["qk_nope_head_dim"] = bad(_int, cfg, "qk_nope_head_dim", dflt["qk_nope_head_dim"], minimum=0,
                                maximum=100_000)
    m["qk_rope_head_dim"] = bad(_int, cfg, "qk_rope_head_dim", dflt["qk_rope_head_dim"], minimum=0,
                                maximum=100_000)
    m["v_head_dim"] = bad(_int, cfg, "v_head_dim", dflt["v_head_dim"], maximum=100_000)
    freq = cfg.get("moe_layer_freq", 1)
    if freq not in (None, 1):
        notes.append(f"moe_layer_freq {show(freq)}: transformers' DeepSeek classes put experts in "
                     "every block from first_k_dense_replace on, and so does the model section")
    mtp = cfg.get("num_nextn_predict_layers")
    if isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0:
        notes.append(f"num_nextn_predict_layers {mtp}: the multi-token-prediction module is not "
                     "counted (transformers' model does not build it)")


def _sliding(cfg: dict, mt: str, m: dict, take, notes: list, bad: Collect) -> None:
    """Sliding-window attention into ``m`` (see the module docstring)."""
    take("sliding_window", "use_sliding_window", "max_window_layers", "layer_types",
         "sliding_window_size")
    if mt in _SLIDING_ALL:
        if cfg.get("sliding_window") is not None:
            m["sliding_window"] = bad(_int, cfg, "sliding_window", maximum=100_000_000)
            m["sliding_window_layers"] = "all"
    elif mt == "gemma2":
        m["sliding_window"] = bad(_int, cfg, "sliding_window", 4096, maximum=100_000_000)
        m["sliding_window_layers"] = "alternate"
        types = cfg.get("layer_types")
        if types is not None and m["num_layers"] is not None:
            want = ["sliding_attention" if (i + 1) % 2 else "full_attention"
                    for i in range(m["num_layers"])]
            if types != want:
                bad.errors.append(_err("layer_types", "must alternate sliding and full attention from "
                                                      "layer 0 (sliding_window_layers holds all or alternate)"))
    elif mt == "qwen2" and bad(_bool, cfg, "use_sliding_window", False) and cfg.get("sliding_window"):
        notes.append("use_sliding_window: Qwen2 slides the layers from max_window_layers on, which "
                     "the model section cannot hold: counted as full attention")


# model-section field -> the config key it came from, to name errors found by ModelSpec
_FROM = {"num_layers": "num_hidden_layers", "hidden_size": "hidden_size",
         "num_attention_heads": "num_attention_heads", "num_kv_heads": "num_key_value_heads",
         "ffn_hidden_size": "intermediate_size", "vocab_size": "vocab_size", "head_dim": "head_dim",
         "num_experts": "num_local_experts", "moe_top_k": "num_experts_per_tok",
         "moe_ffn_hidden_size": "moe_intermediate_size", "num_shared_experts": "n_shared_experts",
         "first_dense_layers": "first_k_dense_replace", "sliding_window": "sliding_window",
         "max_seq_len": "max_position_embeddings"}


def _stand_ins(x: dict) -> dict:
    """Values for the fields ModelSpec.from_dict requires of an architecture, in place of a
    bad key's, that pass the checks reading them (heads divide hidden_size, dense layers at
    most num_layers), so the checks after those still run."""
    return {"num_layers": 10_000, "hidden_size": x.get("num_attention_heads") or 1,
            "num_attention_heads": 1, "ffn_hidden_size": 1, "vocab_size": 1}


def _check(m: dict, bad: Collect) -> None:
    """``ModelSpec.from_dict(m)``'s cross-field checks, their errors renamed to the config
    key (heads that do not divide hidden_size, KV heads that do not divide heads) and
    recorded in ``bad``, every one at once. A field a bad key left unset (None) is left out
    (a required one stands in, :func:`_stand_ins`), and so is each field a check names, before the next
    run; an error of a check that read a field left out (``ScenarioError.depends_on``) is
    a consequence of it, not reported."""
    from .scenario import ModelSpec
    left_out = {k for k, v in m.items() if v is None}
    x = {k: v for k, v in m.items() if v is not None}
    named = {e.field for e in bad.errors}
    for _ in range(len(m) + 1):
        x.update({k: v for k, v in _stand_ins(x).items() if k in left_out})
        try:
            ModelSpec.from_dict(dict(x))
            return
        except ScenarioError as exc:
            errors = getattr(exc, "errors", None) or [exc]
        for e in errors:
            field = e.field.split(".", 1)[-1]
            read = {d.split(".", 1)[-1] for d in e.depends_on}
            err = _err(_FROM.get(field, field), e.message)
            if field not in left_out and not read & left_out and err.field not in named:
                bad.errors.append(err)
                named.add(err.field)
            left_out.add(field)
            x.pop(field, None)
