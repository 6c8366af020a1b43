"""Built-in presets: model architectures, accelerators and node templates.

Each preset is a plain dict in the scenario's own vocabulary (the same keys a user may
write inline), with the ``source`` it came from. The web app seeds its catalog from these
and may pass edited copies back to :func:`simulation.scenario.resolve`; the engine itself
only ever sees explicit values.

Units: bytes, seconds, FLOP/s, bytes/s (SI). "GB" in a source means 1e9 bytes unless noted;
DIMM and HBM sizes sold as "64 GB" / "80 GB" are binary (GiB).
"""

GIB = 2**30
TB = 1e12
GB = 1e9

# ---------------------------------------------------------------- models
_LLAMA2 = "Touvron et al., Llama 2 (arXiv 2307.09288) Table 1 + released config.json"
_GPT3 = "Brown et al., Language Models are Few-Shot Learners (arXiv 2005.14165) Table 2.1"
_KORT = "Korthikanti et al., Reducing Activation Recomputation (arXiv 2205.05198) Table 3"

MODELS: dict[str, dict] = {
    "llama2-7b": dict(
        name="Llama-2-7B", num_layers=32, hidden_size=4096, num_attention_heads=32,
        num_kv_heads=32, ffn_hidden_size=11008, vocab_size=32000, gated_mlp=True,
        tied_embeddings=False, position_embedding="rope", norm="rmsnorm", linear_bias=False, dropout=False,
        max_seq_len=4096, source=_LLAMA2),
    "llama2-13b": dict(
        name="Llama-2-13B", num_layers=40, hidden_size=5120, num_attention_heads=40,
        num_kv_heads=40, ffn_hidden_size=13824, vocab_size=32000, gated_mlp=True,
        tied_embeddings=False, position_embedding="rope", norm="rmsnorm", linear_bias=False, dropout=False,
        max_seq_len=4096, source=_LLAMA2),
    "llama2-70b": dict(
        name="Llama-2-70B", num_layers=80, hidden_size=8192, num_attention_heads=64,
        num_kv_heads=8, ffn_hidden_size=28672, vocab_size=32000, gated_mlp=True,
        tied_embeddings=False, position_embedding="rope", norm="rmsnorm", linear_bias=False, dropout=False,
        max_seq_len=4096, source=_LLAMA2),
    "gpt3-6.7b": dict(
        name="GPT-3 6.7B", num_layers=32, hidden_size=4096, num_attention_heads=32,
        num_kv_heads=32, ffn_hidden_size=16384, vocab_size=50257, gated_mlp=False,
        tied_embeddings=True, position_embedding="learned", norm="layernorm",
        linear_bias=True, max_seq_len=2048, source=_GPT3),
    "gpt3-175b": dict(
        name="GPT-3 175B", num_layers=96, hidden_size=12288, num_attention_heads=96,
        num_kv_heads=96, ffn_hidden_size=49152, vocab_size=50257, gated_mlp=False,
        tied_embeddings=True, position_embedding="learned", norm="layernorm",
        linear_bias=True, max_seq_len=2048, source=_GPT3),
    "megatron-22b": dict(
        name="Megatron GPT 22B", num_layers=48, hidden_size=6144, num_attention_heads=64,
        num_kv_heads=64, ffn_hidden_size=24576, vocab_size=51200, gated_mlp=False,
        tied_embeddings=True, position_embedding="learned", norm="layernorm",
        linear_bias=True, max_seq_len=2048, source=_KORT),
    "mixtral-8x7b": dict(
        name="Mixtral-8x7B", num_layers=32, hidden_size=4096, num_attention_heads=32,
        num_kv_heads=8, ffn_hidden_size=14336, vocab_size=32000, gated_mlp=True,
        tied_embeddings=False, position_embedding="rope", norm="rmsnorm", linear_bias=False, dropout=False,
        num_experts=8, moe_top_k=2, max_seq_len=32768,
        source="Jiang et al., Mixtral of Experts (arXiv 2401.04088) Table 1"),
}

# Open models people fine-tune (issue #14). Each architecture is its published config.json
# (the URL in ``source``; Hugging Face vocabulary -> ours: num_hidden_layers -> num_layers,
# intermediate_size -> ffn_hidden_size, num_key_value_heads -> num_kv_heads,
# tie_word_embeddings -> tied_embeddings, max_position_embeddings -> max_seq_len). The
# counts equal transformers' modules built on the meta device
# (scripts/count_params_meta.py -> tests/data/param_counts_hf.json).
_HF = "https://huggingface.co/{}/blob/main/config.json"


def _hf(name: str, repo: str, layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int,
        tied: bool, ctx: int, note: str = "", **extra) -> dict:
    """A Llama-style (RoPE, RMSNorm, SwiGLU/GeGLU, no dropout) preset from config.json."""
    return dict(name=name, num_layers=layers, hidden_size=hidden, num_attention_heads=heads,
                num_kv_heads=kv, ffn_hidden_size=ffn, vocab_size=vocab, gated_mlp=True,
                tied_embeddings=tied, position_embedding="rope", norm="rmsnorm", linear_bias=False,
                dropout=False, max_seq_len=ctx, **extra,
                source=f"config.json: {_HF.format(repo)}" + (f"; {note}" if note else ""))


_QWEN = "q, k, v biases (Qwen2Attention: nn.Linear(..., bias=True) for q/k/v, o without)"
_GEMMA2 = ("head_dim from config.json; 4 RMSNorms per block (Gemma2DecoderLayer: input, "
           "post_attention, pre_feedforward, post_feedforward); sliding_window 4096 in layers "
           "0, 2, 4, ... (Gemma2Config.layer_types)")
_DEEPSEEK = ("routed + shared experts, dense first blocks (first_k_dense_replace), multi-head "
             "latent attention (DeepseekV3Attention); the multi-token-prediction module is left "
             "out, as transformers' DeepseekV3ForCausalLM leaves it out")

MODELS.update({
    "llama3.1-8b": _hf("Llama-3.1-8B", "meta-llama/Llama-3.1-8B", 32, 4096, 32, 8, 14336, 128256,
                       False, 131072),
    "llama3.1-70b": _hf("Llama-3.1-70B", "meta-llama/Llama-3.1-70B", 80, 8192, 64, 8, 28672, 128256,
                        False, 131072),
    "llama3.1-405b": _hf("Llama-3.1-405B", "meta-llama/Llama-3.1-405B", 126, 16384, 128, 8, 53248,
                         128256, False, 131072,
                         "Llama Team, The Llama 3 Herd of Models (arXiv 2407.21783) Table 3"),
    "llama3.2-1b": _hf("Llama-3.2-1B", "meta-llama/Llama-3.2-1B", 16, 2048, 32, 8, 8192, 128256,
                       True, 131072, head_dim=64),
    "llama3.2-3b": _hf("Llama-3.2-3B", "meta-llama/Llama-3.2-3B", 28, 3072, 24, 8, 8192, 128256,
                       True, 131072, head_dim=128),
    "qwen2.5-0.5b": _hf("Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B", 24, 896, 14, 2, 4864, 151936, True,
                        32768, _QWEN, qkv_bias=True),
    "qwen2.5-1.5b": _hf("Qwen2.5-1.5B", "Qwen/Qwen2.5-1.5B", 28, 1536, 12, 2, 8960, 151936, True,
                        131072, _QWEN, qkv_bias=True),
    "qwen2.5-3b": _hf("Qwen2.5-3B", "Qwen/Qwen2.5-3B", 36, 2048, 16, 2, 11008, 151936, True,
                      32768, _QWEN, qkv_bias=True),
    "qwen2.5-7b": _hf("Qwen2.5-7B", "Qwen/Qwen2.5-7B", 28, 3584, 28, 4, 18944, 152064, False,
                      131072, _QWEN, qkv_bias=True),
    "qwen2.5-14b": _hf("Qwen2.5-14B", "Qwen/Qwen2.5-14B", 48, 5120, 40, 8, 13824, 152064, False,
                       131072, _QWEN, qkv_bias=True),
    "qwen2.5-32b": _hf("Qwen2.5-32B", "Qwen/Qwen2.5-32B", 64, 5120, 40, 8, 27648, 152064, False,
                       131072, _QWEN, qkv_bias=True),
    "qwen2.5-72b": _hf("Qwen2.5-72B", "Qwen/Qwen2.5-72B", 80, 8192, 64, 8, 29568, 152064, False,
                       131072, _QWEN, qkv_bias=True),
    "mistral-7b": _hf("Mistral-7B-v0.1", "mistralai/Mistral-7B-v0.1", 32, 4096, 32, 8, 14336, 32000,
                      False, 32768, "Jiang et al., Mistral 7B (arXiv 2310.06825) Table 1; "
                      "sliding_window 4096 in every layer (MistralAttention)",
                      sliding_window=4096, sliding_window_layers="all"),
    "mixtral-8x22b": _hf("Mixtral-8x22B-v0.1", "mistralai/Mixtral-8x22B-v0.1", 56, 6144, 48, 8, 16384,
                         32000, False, 65536, "8 experts, top 2 (num_local_experts, "
                         "num_experts_per_tok)", num_experts=8, moe_top_k=2),
    "phi3-mini": _hf("Phi-3-mini-4k", "microsoft/Phi-3-mini-4k-instruct", 32, 3072, 32, 32, 8192, 32064,
                     False, 4096, "fused qkv_proj and gate_up_proj (Phi3Attention, Phi3MLP); "
                     "sliding_window 2047 in every layer (Phi3Attention)",
                     fused_projections=True, sliding_window=2047, sliding_window_layers="all",
                     layer_family="phi3"),
    "phi4": _hf("Phi-4", "microsoft/phi-4", 40, 5120, 40, 10, 17920, 100352, False, 16384,
                "Phi-4 technical report (arXiv 2412.08905); Phi3ForCausalLM with fused qkv_proj and "
                "gate_up_proj", fused_projections=True, layer_family="phi3"),
    "gemma-7b": _hf("Gemma-7B", "google/gemma-7b", 28, 3072, 16, 16, 24576, 256000, True, 8192,
                    "head_dim 256: 16 heads x 256 = 4096 != hidden 3072", head_dim=256,
                    layer_family="gemma"),
    "gemma2-9b": _hf("Gemma-2-9B", "google/gemma-2-9b", 42, 3584, 16, 8, 14336, 256000, True, 8192,
                     _GEMMA2, head_dim=256, norms_per_block=4, sliding_window=4096,
                     sliding_window_layers="alternate", layer_family="gemma2",
                     attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
    "gemma2-27b": _hf("Gemma-2-27B", "google/gemma-2-27b", 46, 4608, 32, 16, 36864, 256000, True,
                      8192, _GEMMA2, head_dim=128, norms_per_block=4, sliding_window=4096,
                      sliding_window_layers="alternate", layer_family="gemma2",
                      attn_logit_softcapping=50.0, final_logit_softcapping=30.0),
    # DeepSeek-V3: 61 blocks, the first 3 dense (MLP 18432), then 256 routed experts of
    # 2048 (top 8) + 1 shared; MLA with q_lora_rank 1536, kv_lora_rank 512, 128 + 64 q/k
    # head width, v 128. "671B total parameters with 37B activated" (DeepSeek-AI, DeepSeek-V3
    # Technical Report, arXiv 2412.19437, abstract); the 685B of the Hub checkpoint add the
    # 14B MTP module (model card).
    "deepseek-v3": _hf("DeepSeek-V3", "deepseek-ai/DeepSeek-V3", 61, 7168, 128, 128, 18432, 129280,
                       False, 163840, "DeepSeek-V3 Technical Report (arXiv 2412.19437): 671B total, "
                       "37B activated; " + _DEEPSEEK, num_experts=256, moe_top_k=8,
                       moe_ffn_hidden_size=2048, num_shared_experts=1, first_dense_layers=3,
                       q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128,
                       qk_rope_head_dim=64, v_head_dim=128),
    # DeepSeek-V2-Lite: 27 blocks, the first dense (10944), then 64 routed experts of 1408
    # (top 6) + 2 shared; MLA without q compression (q_lora_rank null). "15.7B parameters,
    # 2.4B activated" (model card, deepseek-ai/DeepSeek-V2-Lite).
    "deepseek-v2-lite": _hf("DeepSeek-V2-Lite", "deepseek-ai/DeepSeek-V2-Lite", 27, 2048, 16, 16,
                            10944, 102400, False, 163840, "model card: 15.7B total, 2.4B activated; "
                            + _DEEPSEEK, num_experts=64, moe_top_k=6, moe_ffn_hidden_size=1408,
                            num_shared_experts=2, first_dense_layers=1, kv_lora_rank=512,
                            qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128),
    "falcon-7b": dict(
        name="Falcon-7B", num_layers=32, hidden_size=4544, num_attention_heads=71, num_kv_heads=1,
        ffn_hidden_size=4 * 4544, vocab_size=65024, gated_mlp=False, tied_embeddings=True,
        position_embedding="rope", norm="layernorm", linear_bias=False, dropout=False,
        norms_per_block=1, max_seq_len=2048, layer_family="falcon",
        source=(f"config.json: {_HF.format('tiiuae/falcon-7b')}; multi-query (1 KV head), GELU MLP "
                "of 4h, parallel attention and MLP behind one input_layernorm (FalconDecoderLayer "
                "with parallel_attn and not new_decoder_architecture)")),
})

# ---------------------------------------------------------------- accelerators
# Usable HBM: the driver exposes about 79.3 GiB of an "80 GB" part (ECC and reserved
# pages); the same ratio is applied to the other parts.
_USABLE = 79.3 / 80

ACCELERATORS: dict[str, dict] = {
    "a100-sxm4-40gb": dict(
        name="NVIDIA A100 40GB SXM4", hbm_capacity_bytes=int(40 * GIB * _USABLE),
        hbm_bytes_per_s=1555 * GB, peak_flops_bf16=312e12, peak_flops_fp32=19.5e12,
        host_link_bytes_per_s=25 * GB, scaleup_bytes_per_s=300 * GB,
        source="NVIDIA A100 datasheet; PCIe 4.0 x16 measured ~25 GB/s"),
    "a100-sxm4-80gb": dict(
        name="NVIDIA A100 80GB SXM4", hbm_capacity_bytes=int(80 * GIB * _USABLE),
        hbm_bytes_per_s=2039 * GB, peak_flops_bf16=312e12, peak_flops_fp32=19.5e12,
        host_link_bytes_per_s=25 * GB, scaleup_bytes_per_s=300 * GB,
        source="NVIDIA A100 datasheet; PCIe 4.0 x16 measured ~25 GB/s"),
    "h100-sxm5-80gb": dict(
        name="NVIDIA H100 SXM5 80GB", hbm_capacity_bytes=int(80 * GIB * _USABLE),
        hbm_bytes_per_s=3350 * GB, peak_flops_bf16=989e12, peak_flops_fp32=67e12,
        host_link_bytes_per_s=55.4 * GB, scaleup_bytes_per_s=450 * GB, peak_flops_fp8=1979e12,
        source=("NVIDIA H100 datasheet (dense bf16 989 TFLOP/s; FP8 3,958 with sparsity = 1,979 "
                "dense); PCIe 5.0 x16 H2D measured 55.4 GB/s")),
    "h200-sxm-141gb": dict(
        name="NVIDIA H200 SXM 141GB", hbm_capacity_bytes=int(140 * GIB),
        hbm_bytes_per_s=4800 * GB, peak_flops_bf16=989e12, peak_flops_fp32=67e12,
        host_link_bytes_per_s=55.4 * GB, scaleup_bytes_per_s=450 * GB, peak_flops_fp8=1979e12,
        source=("NVIDIA H200 datasheet (FP8 3,958 TFLOP/s with sparsity = 1,979 dense); about "
                "140 GiB exposed")),
    "b200-sxm-180gb": dict(
        name="NVIDIA B200 SXM", hbm_capacity_bytes=int(180 * GIB * _USABLE),
        hbm_bytes_per_s=8000 * GB, peak_flops_bf16=2250e12, peak_flops_fp32=80e12,
        host_link_bytes_per_s=55.4 * GB, scaleup_bytes_per_s=900 * GB, peak_flops_fp8=4500e12,
        mxfp8=True, fp8_non_tn_gemm=True,
        source=("NVIDIA DGX B200 datasheet (72 PFLOPS FP8 training for 8 GPUs, with sparsity: "
                "4,500 TFLOP/s dense per GPU; Blackwell tensor cores take MXFP8); FP8 GEMMs in "
                "any layout on compute capability 10.0 (Transformer Engine "
                "pytorch/utils.py is_non_tn_fp8_gemm_supported)")),
    "mi300x-192gb": dict(
        name="AMD Instinct MI300X", hbm_capacity_bytes=int(192 * GIB * _USABLE),
        hbm_bytes_per_s=5300 * GB, peak_flops_bf16=1307.4e12, peak_flops_fp32=163.4e12,
        host_link_bytes_per_s=55.4 * GB, scaleup_bytes_per_s=448 * GB, peak_flops_fp8=2614.9e12,
        source="AMD Instinct MI300X datasheet (OCP-FP8 2,614.9 TFLOP/s dense, 5,229.8 with sparsity)"),
}

# ---------------------------------------------------------------- nodes
_DGX_H100_SRC = ("NVIDIA DGX BasePOD reference architecture, core components (DGX H100: 2 TB "
                 "DDR5, 8x 3.84 TB U.2 data drives, 8x ConnectX-7 400 Gb/s)")
_AWS_CB = "AWS EC2 Capacity Blocks price list, late 2024 (reserved short-term, not on-demand)"
_NVME_PCIE4 = dict(  # U.2 PCIe 4.0 data drives of DGX H100/H200/B200, figures of a Kioxia CM6
    device="8x 3.84 TB U.2 NVMe (PCIe 4.0, Kioxia CM6-class: 6.9 GB/s read, 4.2 GB/s write)",
    devices=8, capacity_bytes=8 * 3.84 * TB, read_bytes_per_s=8 * 6.9 * GB,
    write_bytes_per_s=8 * 4.2 * GB, latency_s=80e-6)
_DDR_SPR_2TIB = dict(
    device="2 TiB DDR5-4800 (32x 64 GB RDIMM, 2 sockets x 8 channels)",
    devices=32, capacity_bytes=2048 * GIB, read_bytes_per_s=2 * 307.2 * GB,
    write_bytes_per_s=2 * 307.2 * GB, latency_s=100e-9)

# Host CPUs (cpu_cores: physical cores of both sockets; cpu_isa: the widest vector ISA,
# which DeepSpeed's CPU-Adam is built for, see simulation.cpu_adam).
_SPR_8480C = dict(cpu_cores=2 * 56, cpu_isa="avx512",
                  cpu_source="2x Intel Xeon Platinum 8480C, 56 cores each, 112 in total (NVIDIA DGX "
                             "BasePOD reference architecture, core components: DGX H200 and H100)")
_EMR_8570 = dict(cpu_cores=2 * 56, cpu_isa="avx512",
                 cpu_source="2x Intel Xeon Platinum 8570, 56 cores each (NVIDIA DGX B200 user guide, "
                            "introduction: hardware overview)")
_ROME_7742 = dict(cpu_cores=2 * 64, cpu_isa="avx2",
                  cpu_source="2x AMD EPYC 7742, 64 cores each (NVIDIA DGX A100 user guide, hardware "
                             "overview); Zen 2 has AVX2, no AVX-512")
# DGX A100: four PCIe Gen4 switches, each with two A100s, two ConnectX-6 NICs and two NVMe
# drives behind one x16 Gen4 uplink to its CPU (~25 GB/s measured, as the host link).
_DGX_A100_PCIE = dict(
    pcie_switch_gpus=2, pcie_switch_uplink_bytes_per_s=25 * GB,
    pcie_switch_source=("NVIDIA DGX A100 datasheet block diagram (2 CPUs, each with 2 PCIe Gen4 "
                        "switches; each switch: 2 A100, 2 HDR NICs, 2 NVMe), as summarised in "
                        "github.com/jasperzhong/read-papers-and-code issue 220; NCCL topology dump "
                        "of a DGX A100 (NVIDIA/nccl issue 1505): Broadcom switches at 16 GT/s x16"))

# Third-generation NVSwitch with NVLink SHARP (NVIDIA H100 Tensor Core GPU Architecture
# whitepaper, "NVLink Switch System": in-switch all-reduce); NCCL uses it as NVLS.
_NVLS = dict(nvls=True)

NODES: dict[str, dict] = {
    "dgx-h100": dict(
        **_NVLS,
        name="NVIDIA DGX H100", accelerator="h100-sxm5-80gb", gpus_per_node=8,
        nic_bytes_per_s=8 * 50 * GB,
        tiers=dict(ddr=_DDR_SPR_2TIB, nvme=_NVME_PCIE4), source=_DGX_H100_SRC, **_SPR_8480C,
        price_usd_per_node_hour=39.33,
        price_source="AWS p5.48xlarge (8x H100): " + _AWS_CB),
    "dgx-h200": dict(
        **_NVLS,
        name="NVIDIA DGX H200", accelerator="h200-sxm-141gb", gpus_per_node=8,
        nic_bytes_per_s=8 * 50 * GB,
        tiers=dict(ddr=_DDR_SPR_2TIB, nvme=_NVME_PCIE4),
        source="NVIDIA DGX H200 user guide (2 TB DDR5, 8x 3.84 TB U.2)", **_SPR_8480C,
        price_usd_per_node_hour=43.26,
        price_source="AWS p5e.48xlarge (8x H200): " + _AWS_CB),
    "dgx-a100-80gb": dict(
        name="NVIDIA DGX A100 (640 GB)", accelerator="a100-sxm4-80gb", gpus_per_node=8,
        nic_bytes_per_s=8 * 25 * GB,
        tiers=dict(
            ddr=dict(device="2 TiB DDR4-3200 (2x AMD EPYC 7742, 8 channels each)", devices=32,
                     capacity_bytes=2048 * GIB, read_bytes_per_s=2 * 204.8 * GB,
                     write_bytes_per_s=2 * 204.8 * GB, latency_s=100e-9),
            nvme=_NVME_PCIE4),
        source="NVIDIA DGX A100 user guide (2 TB DDR4, 8x 3.84 TB U.2, 8x HDR 200 Gb/s)", **_ROME_7742,
        **_DGX_A100_PCIE,
        price_usd_per_node_hour=14.75,
        price_source="AWS p4d.24xlarge (8x A100 40GB) as a proxy: " + _AWS_CB),
    "dgx-b200": dict(
        **_NVLS,
        name="NVIDIA DGX B200", accelerator="b200-sxm-180gb", gpus_per_node=8,
        nic_bytes_per_s=8 * 50 * GB,
        tiers=dict(ddr=_DDR_SPR_2TIB, nvme=_NVME_PCIE4),
        source="NVIDIA DGX B200 user guide (2 TB DDR5, 8x 3.84 TB U.2 RAID0)", **_EMR_8570,
        price_usd_per_node_hour=8 * 6.03,
        price_source=("8x B200 at $6.03 per GPU-hour on-demand (Spheron, 2026-03-19, "
                      "https://www.spheron.network/blog/nvidia-b200-complete-guide); AWS p6-b200 is "
                      "sold as Capacity Blocks only, with no public rate in the AWS list read for "
                      "the other DGX prices")),
    "dgx-h100-cxl": dict(
        **_NVLS,
        name="DGX H100 + 4x 256 GB CXL expanders (example build)",
        accelerator="h100-sxm5-80gb", gpus_per_node=8, nic_bytes_per_s=8 * 50 * GB,
        tiers=dict(
            ddr=_DDR_SPR_2TIB, nvme=_NVME_PCIE4,
            cxl=dict(device="4x Micron CZ120 256 GB CXL 2.0 Type-3 (PCIe 5.0 x8, 36 GB/s each)",
                     devices=4, capacity_bytes=4 * 256 * GIB, read_bytes_per_s=4 * 36 * GB,
                     write_bytes_per_s=4 * 36 * GB, latency_s=250e-9)),
        source=_DGX_H100_SRC + "; CXL: Micron CZ120 announcement (36 GB/s per module, MLC 2:1)",
        **_SPR_8480C,
        price_usd_per_node_hour=39.33,
        price_source="AWS p5.48xlarge (8x H100), CXL modules not priced: " + _AWS_CB),
}

TIER_NAMES = ("ddr", "nvme", "cxl")


# ------------------------------------------------- consumer and workstation GPUs (issue #14)
# GDDR cards: the *_hbm_* keys hold the card's GDDR6/GDDR6X capacity and bandwidth (the
# engine's one device-memory tier); "24 GB" / "48 GB" cards are 24 / 48 GiB and get the
# same usable share as the HBM parts (_USABLE). peak_flops_bf16 is the dense BF16 Tensor
# Core rate *with FP32 accumulate*, which is what PyTorch's bf16 GEMMs use: on GeForce
# cards (RTX 3090, RTX 4090) that rate is half the headline FP16-accumulate figure, on the
# professional cards (RTX 6000 Ada, L40S) it is the full rate. None of the Ada cards has
# NVLink: scale-up traffic crosses PCIe 4.0 x16 (measured ~25 GB/s each way, as the A100's
# host link; a GeForce card has no peer-to-peer over PCIe, NCCL stages through host memory
# and may reach less). The RTX 3090 pairs over an NVLink bridge (template below).
_AMPERE_WP = ("NVIDIA Ampere GA102 GPU Architecture whitepaper (2020), Appendix A, the GeForce "
              "RTX 3090 table")
_ADA_WP = "NVIDIA Ada GPU Architecture whitepaper (v2.01, 2023), Appendix A"
_PCIE4_MEASURED = 25 * GB     # PCIe 4.0 x16, measured ~25 GB/s each way (as the A100's)

ACCELERATORS.update({
    "rtx3090-24gb": dict(
        name="NVIDIA GeForce RTX 3090", hbm_capacity_bytes=int(24 * GIB * _USABLE),
        hbm_bytes_per_s=936 * GB, peak_flops_bf16=71e12, peak_flops_fp32=35.6e12,
        host_link_bytes_per_s=_PCIE4_MEASURED, scaleup_bytes_per_s=_PCIE4_MEASURED,
        source=(f"{_AMPERE_WP}: 24 GB GDDR6X at 936 GB/s; peak BF16 Tensor TFLOPS with FP32 "
                "accumulate 71 dense (the headline FP16-accumulate figure is 142: GeForce runs "
                "FP32 accumulate at half rate); FP32 35.6 TFLOPS; PCIe 4.0 x16. Scale-up over "
                "PCIe; a pair can bridge NVLink (template rtx3090-nvlink-pair)")),
    "rtx4090-24gb": dict(
        name="NVIDIA GeForce RTX 4090", hbm_capacity_bytes=int(24 * GIB * _USABLE),
        hbm_bytes_per_s=1008 * GB, peak_flops_bf16=165.2e12, peak_flops_fp32=82.6e12,
        host_link_bytes_per_s=_PCIE4_MEASURED, scaleup_bytes_per_s=_PCIE4_MEASURED,
        source=(f"{_ADA_WP}, the GeForce RTX 4090 table: 24 GB GDDR6X at 1008 GB/s; peak BF16 "
                "Tensor TFLOPS with FP32 accumulate 165.2 dense, half the headline 330.3 "
                "(FP16 accumulate); FP8 Tensor with FP32 accumulate 330.3 dense (half the "
                "FP16-accumulate 660.6); FP32 82.6 TFLOPS; PCIe 4.0 x16, no NVLink"),
        peak_flops_fp8=330.3e12),
    "rtx6000-ada-48gb": dict(
        name="NVIDIA RTX 6000 Ada Generation", hbm_capacity_bytes=int(48 * GIB * _USABLE),
        hbm_bytes_per_s=960 * GB, peak_flops_bf16=364.2e12, peak_flops_fp32=91.1e12,
        host_link_bytes_per_s=_PCIE4_MEASURED, scaleup_bytes_per_s=_PCIE4_MEASURED,
        source=(f"{_ADA_WP}, the RTX 6000 Ada table, and the NVIDIA RTX 6000 Ada datasheet: 48 GB "
                "GDDR6 ECC at 960 GB/s; peak BF16 Tensor TFLOPS with FP32 accumulate 364.2 dense "
                "(full rate on the professional card); FP8 728.5 dense (1,457 with sparsity); "
                "FP32 91.1 TFLOPS; PCIe 4.0 x16, no NVLink"),
        peak_flops_fp8=728.5e12),
    "l40s-48gb": dict(
        name="NVIDIA L40S", hbm_capacity_bytes=int(48 * GIB * _USABLE),
        hbm_bytes_per_s=864 * GB, peak_flops_bf16=362.05e12, peak_flops_fp32=91.6e12,
        host_link_bytes_per_s=_PCIE4_MEASURED, scaleup_bytes_per_s=_PCIE4_MEASURED,
        peak_flops_fp8=733e12,
        source=("NVIDIA L40S datasheet: 48 GB GDDR6 ECC at 864 GB/s; BF16 Tensor Core 362.05 "
                "TFLOPS dense (733 with sparsity); FP8 733 dense (1,466 with sparsity); FP32 "
                "91.6 TFLOPS; PCIe 4.0 x16, no NVLink")),
})

# ------------------------------------------------- the machines of issue #15
# H800 / A800: the export versions of H100 SXM5 / A100 SXM4, the same SMs, clocks and HBM,
# with NVLink cut to 400 GB/s bidirectional (8 links instead of 18 / 12): 200 GB/s each way.
# DeepSeek measured 160 GB/s one way on H800 (DeepSeek-V3 technical report, arXiv
# 2412.19437, Sec. 3.2.2; deepseek-ai/DeepSeek-V3 issue 28: 400 GB/s is the bidirectional
# theory); the preset keeps the datasheet rate, as the H100's 450 GB/s is.
ACCELERATORS.update({
    "h800-sxm5-80gb": dict(
        ACCELERATORS["h100-sxm5-80gb"], name="NVIDIA H800 SXM5 80GB", scaleup_bytes_per_s=200 * GB,
        source=("NVIDIA H800 SXM5: H100 SXM5 compute and HBM (H100 datasheet: dense bf16 989 "
                "TFLOP/s, FP8 1,979 dense, 3.35 TB/s) with NVLink 400 GB/s bidirectional "
                "(deepseek-ai/DeepSeek-V3 issue 28; DeepSeek-V3 report Sec. 3.2.2 measures 160 "
                "GB/s one way)")),
    "a800-sxm4-80gb": dict(
        ACCELERATORS["a100-sxm4-80gb"], name="NVIDIA A800 SXM4 80GB", scaleup_bytes_per_s=200 * GB,
        source=("NVIDIA A800 SXM4 80GB datasheet: A100 80GB compute and HBM (312 TFLOP/s bf16, "
                "2039 GB/s) with NVLink 400 GB/s bidirectional; PCIe 4.0 x16 measured ~25 GB/s")),
    "mi325x-256gb": dict(
        name="AMD Instinct MI325X", hbm_capacity_bytes=int(256 * GIB * _USABLE),
        hbm_bytes_per_s=6000 * GB, peak_flops_bf16=1307.4e12, peak_flops_fp32=163.4e12,
        host_link_bytes_per_s=55.4 * GB, scaleup_bytes_per_s=448 * GB, peak_flops_fp8=2614.9e12,
        source=("AMD Instinct MI325X datasheet: 256 GB HBM3E at 6 TB/s, the MI300X's CDNA 3 "
                "compute (1307.4 TFLOP/s dense bf16, 2,614.9 dense OCP-FP8, 163.4 fp32); Infinity Fabric 7 peer links "
                "x 64 GB/s each way = 448 GB/s (as the MI300X preset); PCIe 5.0 x16")),
    # V100 has no bf16: peak_flops_bf16 holds its 16-bit (fp16) Tensor Core peak, which is
    # what a V100 trains with (training.precision "fp16").
    "v100-sxm2-32gb": dict(
        name="NVIDIA V100 SXM2 32GB", hbm_capacity_bytes=int(32 * GIB * _USABLE),
        hbm_bytes_per_s=900 * GB, peak_flops_bf16=125e12, peak_flops_fp32=15.7e12,
        host_link_bytes_per_s=12.15 * GB, scaleup_bytes_per_s=150 * GB,
        source=("NVIDIA Tesla V100 datasheet (SXM2): 32 GB HBM2 at 900 GB/s, 125 TFLOP/s fp16 "
                "Tensor Core (no bf16: the 16-bit peak is fp16's), 15.7 TFLOP/s fp32; NVLink 2.0 "
                "6 links x 25 GB/s each way = 150 GB/s (300 GB/s total); PCIe 3.0 x16 measured "
                "12.15 GB/s H2D (mpicbg-scicomp/gearshifft PR 82)")),
})

# A workstation host (an example build, as dgx-h100-cxl is): one AMD Ryzen 9 7950X (16 Zen 4
# cores, AVX-512), 128 GiB DDR5 in four DIMMs on two channels, at the 3600 MT/s AMD rates for
# four DIMMs (2 x 28.8 GB/s), and one PCIe 4.0 NVMe drive (Samsung 990 Pro 2 TB datasheet:
# 7.45 GB/s read, 6.9 GB/s write).
_WORKSTATION = dict(
    cpu_cores=16, cpu_isa="avx512",
    cpu_source="AMD Ryzen 9 7950X, 16 cores, Zen 4 with AVX-512 (AMD product page); example build",
    tiers=dict(
        ddr=dict(device="128 GiB DDR5-3600 (4x 32 GB UDIMM, 2 channels)", devices=4,
                 capacity_bytes=128 * GIB, read_bytes_per_s=2 * 28.8 * GB,
                 write_bytes_per_s=2 * 28.8 * GB, latency_s=100e-9),
        nvme=dict(device="1x 2 TB PCIe 4.0 NVMe (Samsung 990 Pro: 7.45 GB/s read, 6.9 GB/s write)",
                  devices=1, capacity_bytes=2 * TB, read_bytes_per_s=7.45 * GB,
                  write_bytes_per_s=6.9 * GB, latency_s=80e-6)))
_WS_SRC = ("one GPU in an example workstation (Ryzen 9 7950X, 128 GiB DDR5, 1 NVMe); the price "
           "is a cloud rental of the same GPU, whose host differs")
# RunPod's serverless list prices (flex workers, per second, docs.runpod.io/serverless/pricing,
# as stored in 2026), times 3600.
_RUNPOD = "RunPod serverless flex price list, https://docs.runpod.io/serverless/pricing (2026)"

NODES.update({
    "rtx3090-workstation": dict(
        name="Workstation, 1x RTX 3090", accelerator="rtx3090-24gb", gpus_per_node=1,
        nic_bytes_per_s=1.25 * GB, source="RTX 3090: " + _WS_SRC + "; 10 GbE", **_WORKSTATION,
        price_usd_per_node_hour=0.00019 * 3600,
        price_source=f"$0.00019/s for L4, A5000, 3090 (24 GB): {_RUNPOD}"),
    "rtx3090-nvlink-pair": dict(
        name="Workstation, 2x RTX 3090 + NVLink bridge",
        accelerator=dict(preset="rtx3090-24gb", scaleup_bytes_per_s=56.25 * GB),
        gpus_per_node=2, nic_bytes_per_s=1.25 * GB,
        source=("two RTX 3090 joined by an NVLink bridge: GA102 third-generation NVLink, four x4 "
                "links at 14.0625 GB/s each way = 56.25 GB/s each way, 112.5 GB/s total "
                f"({_AMPERE_WP}, 'NVLink'); host: " + _WS_SRC + "; 10 GbE"),
        **_WORKSTATION,
        price_usd_per_node_hour=2 * 0.00019 * 3600,
        price_source=f"2x $0.00019/s for 3090: {_RUNPOD}"),
    "rtx4090-workstation": dict(
        name="Workstation, 1x RTX 4090", accelerator="rtx4090-24gb", gpus_per_node=1,
        nic_bytes_per_s=1.25 * GB, source="RTX 4090: " + _WS_SRC + "; 10 GbE", **_WORKSTATION,
        price_usd_per_node_hour=0.00031 * 3600,
        price_source=f"$0.00031/s for 4090 PRO (24 GB): {_RUNPOD}"),
    "rtx6000-ada-workstation": dict(
        name="Workstation, 1x RTX 6000 Ada", accelerator="rtx6000-ada-48gb", gpus_per_node=1,
        nic_bytes_per_s=1.25 * GB, source="RTX 6000 Ada: " + _WS_SRC + "; 10 GbE", **_WORKSTATION,
        price_usd_per_node_hour=0.00053 * 3600,
        price_source=f"$0.00053/s for L40, L40S, 6000 Ada PRO (48 GB): {_RUNPOD}"),
    "l40s-1gpu": dict(
        name="AWS g6e.xlarge (1x L40S)", accelerator="l40s-48gb", gpus_per_node=1,
        nic_bytes_per_s=10 / 8 * GB,
        cpu_cores=2, cpu_isa="avx2",
        cpu_source="4 vCPUs (2 physical cores) of a 3rd-generation AMD EPYC (Zen 3: AVX2, no AVX-512)",
        tiers=dict(ddr=dict(device="32 GiB of the host's DDR4-3200 (bandwidth: 2 channels, assumed)",
                            capacity_bytes=32 * GIB, read_bytes_per_s=2 * 25.6 * GB,
                            write_bytes_per_s=2 * 25.6 * GB, latency_s=100e-9)),
        source=("AWS EC2 g6e.xlarge: 1x L40S, 4 vCPUs, 32 GiB, 10 Gb/s (instance table of "
                "https://deploybase.ai/articles/l40s-aws, March 2026); local NVMe left out"),
        price_usd_per_node_hour=1.861,
        price_source=("AWS g6e.xlarge on-demand, us-east-1, as listed 2025-08-12 by "
                      "https://modal.com/blog/nvidia-l40s-price-article")),
    "l40s-8gpu-server": dict(
        name="8x L40S PCIe server (example build)", accelerator="l40s-48gb", gpus_per_node=8,
        nic_bytes_per_s=4 * 50 * GB,
        cpu_cores=2 * 64, cpu_isa="avx512",
        cpu_source="2x AMD EPYC 9554, 64 Zen 4 cores each (AVX-512), the GDS report's L40S host CPU",
        tiers=dict(
            ddr=dict(device="1.5 TiB DDR5-4800 (24x 64 GB RDIMM, 2 sockets x 12 channels)",
                     devices=24, capacity_bytes=1536 * GIB, read_bytes_per_s=2 * 460.8 * GB,
                     write_bytes_per_s=2 * 460.8 * GB, latency_s=100e-9),
            nvme=dict(device="4x 7.68 TB Solidigm D7-PS1010 RAID0 (gdsio measured: 53.0 GiB/s "
                             "read, 39.5 GiB/s write)", devices=4, capacity_bytes=4 * 7.68 * TB,
                      read_bytes_per_s=53.0 * GIB, write_bytes_per_s=39.5 * GIB, latency_s=80e-6)),
        source=("8x L40S on PCIe 4.0 (no NVLink: scale-up over PCIe), 4x 400 Gb/s NICs; host "
                "after https://gds-report.pages.dev/gdsio/ (4x L40S, EPYC 9554, 4x D7-PS1010) with "
                "a second socket; an example build"),
        price_usd_per_node_hour=8 * 0.00053 * 3600,
        price_source=f"8x $0.00053/s for L40S (48 GB): {_RUNPOD}"),
    "a100-40gb-1gpu": dict(
        name="Lambda 1x A100 40GB SXM4", accelerator="a100-sxm4-40gb", gpus_per_node=1,
        nic_bytes_per_s=25 / 8 * GB,
        tiers=dict(ddr=dict(device="200 GiB of the host's DDR4 (1/8 of a DGX A100-class host's "
                                   "bandwidth, assumed)", capacity_bytes=200 * GIB,
                            read_bytes_per_s=2 * 204.8 * GB / 8, write_bytes_per_s=2 * 204.8 * GB / 8,
                            latency_s=100e-9)),
        cpu_cores=15, cpu_isa="avx2",
        cpu_source="30 vCPUs (15 cores) of an AMD EPYC (Zen 2/3: AVX2)",
        source=("one A100 40GB SXM4 as a cloud instance (Lambda gpu_1x_a100_sxm4: 30 vCPUs, "
                "200 GiB RAM); host bandwidth assumed, local disk left out"),
        price_usd_per_node_hour=1.48,
        price_source=("Lambda 1x A100 40GB, $1.48/h on-demand, verified 2026-05-07 from Lambda's "
                      "pricing by https://techbytes.app/posts/serverless-gpu-pricing-matrix-"
                      "modal-replicate-lambda-2026/")),
})

# 8-GPU AMD platforms: host after AMD's MLPerf Inference v4.1 system (8x MI300X, 2x AMD EPYC
# 9374F, 24x 64 GB DDR5, 2x 3.5 TB NVMe), 8x 400 Gb/s NICs as Azure ND MI300X v5 has; the
# GPUs fully connected by Infinity Fabric (7 links x 64 GB/s each way per GPU).
_AMD_HOST = dict(
    nic_bytes_per_s=8 * 50 * GB, cpu_cores=2 * 32, cpu_isa="avx512",
    cpu_source="2x AMD EPYC 9374F, 32 Zen 4 cores each, AVX-512 (MLPerf Inference v4.1 AMD system)",
    tiers=dict(
        ddr=dict(device="1.5 TiB DDR5-4800 (24x 64 GB RDIMM, 2 sockets x 12 channels)", devices=24,
                 capacity_bytes=1536 * GIB, read_bytes_per_s=2 * 460.8 * GB,
                 write_bytes_per_s=2 * 460.8 * GB, latency_s=100e-9),
        nvme=dict(device="2x 3.5 TB NVMe (drive rates of a Kioxia CM6-class PCIe 4.0 drive, assumed)",
                  devices=2, capacity_bytes=2 * 3.5 * TB, read_bytes_per_s=2 * 6.9 * GB,
                  write_bytes_per_s=2 * 4.2 * GB, latency_s=80e-6)))
_AMD_SRC = ("AMD MLPerf Inference v4.1 system 8xMI300X_2xEPYC-9374F (mlcommons/inference_results_v4.1, "
            "closed/AMD/systems); Infinity Fabric: github.com/stas00/ml-engineering network/README.md; "
            "8x 400 Gb/s as Azure ND MI300X v5")


def _unpriced(template: dict) -> dict:
    """A template without its price (for a board sold in its host but never rented at a
    public list price)."""
    return {k: v for k, v in template.items() if not k.startswith("price")}


_CLIFF = "https://www.cliffcenter.com/research/amd-inference-economics (2026-05-18)"

NODES.update({
    "mi300x-8gpu": dict(
        name="8x AMD Instinct MI300X platform", accelerator="mi300x-192gb", gpus_per_node=8,
        **_AMD_HOST, source=_AMD_SRC,
        price_usd_per_node_hour=8 * 1.85,
        price_source=f"8x MI300X at $1.85 per GPU-hour on-demand (Vultr) as listed by {_CLIFF}"),
    "mi325x-8gpu": dict(
        name="8x AMD Instinct MI325X platform", accelerator="mi325x-256gb", gpus_per_node=8,
        **_AMD_HOST, source=_AMD_SRC + " (the MI300X host taken for the MI325X, assumed)",
        price_usd_per_node_hour=8 * 1.95,
        price_source=f"8x MI325X at $1.95 per GPU-hour (TensorWave) as listed by {_CLIFF}"),
    # HGX H800 / A800 hosts as DGX H100 / A100 (no DGX of their own); no public list price.
    "hgx-h800": dict(
        _unpriced(NODES["dgx-h100"]), name="HGX H800 (8x H800, DGX H100 host)", accelerator="h800-sxm5-80gb",
        source=(_DGX_H100_SRC + "; the H800 board in the DGX H100 host (DeepSeek-V3 report "
                "Sec. 3.1: 8 GPUs by NVLink and NVSwitch per node, InfiniBand across); the "
                "third-generation NVSwitch's NVLS kept, not measured on H800"),
),
    "hgx-a800": dict(
        _unpriced(NODES["dgx-a100-80gb"]), name="HGX A800 (8x A800 80GB, DGX A100 host)",
        accelerator="a800-sxm4-80gb",
        source="NVIDIA DGX A100 user guide host (2 TB DDR4, 8x 3.84 TB U.2, 8x HDR) with A800 GPUs",
),
    "dgx-2-v100": dict(
        name="NVIDIA DGX-2 (16x V100 32GB)", accelerator="v100-sxm2-32gb", gpus_per_node=16,
        nic_bytes_per_s=8 * 12.5 * GB,
        cpu_cores=2 * 24, cpu_isa="avx512",
        cpu_source="2x Intel Xeon Platinum 8168, 24 cores each (Skylake-SP: AVX-512)",
        tiers=dict(
            ddr=dict(device="1.5 TB DDR4-2666 (2 sockets x 6 channels)", devices=24,
                     capacity_bytes=1536 * GIB, read_bytes_per_s=2 * 6 * 21.33 * GB,
                     write_bytes_per_s=2 * 6 * 21.33 * GB, latency_s=100e-9),
            nvme=dict(device="8x 3.84 TB NVMe (PCIe 3.0 x4 drives: ~3.2 GB/s read, 2 GB/s "
                             "write each, assumed)", devices=8, capacity_bytes=8 * 3.84 * TB,
                      read_bytes_per_s=8 * 3.2 * GB, write_bytes_per_s=8 * 2 * GB, latency_s=90e-6)),
        source=("NVIDIA DGX-2 datasheet: 16x V100 32GB on 12 NVSwitches (every GPU to every GPU "
                "at 150 GB/s each way: one scale-up domain of 16, as the cluster model needs), "
                "1.5 TB DDR4, 30 TB NVMe, 8x 100 Gb/s EDR InfiniBand; first-generation NVSwitch: "
                "no NVLS. No cloud rents DGX-2 nodes today: no price"),
),
})

# ------------------------------------------------- GB200 NVL72 (issue #15)
# One GB200 NVL72 rack: 18 compute trays (the hosts: cluster "nodes"), each with 2 GB200
# superchips = 2 Grace CPUs + 4 Blackwell GPUs, all 72 GPUs in one NVLink 5 domain through
# the rack's NVLink Switch trays (cluster.nvlink_domain_gpus = 72), InfiniBand or Ethernet
# between racks. The template is one tray: ``num_nodes`` counts trays (18 a rack), and
# the price is per tray-hour. Per-GPU figures are NVIDIA's rack totals over 72 (GB200
# NVL72 page, https://www.nvidia.com/en-us/data-center/gb200-nvl72/, specifications
# table): FP16/BF16 Tensor Core 360 PFLOPS is "with sparsity" (the table's footnote), so
# dense is 180 PFLOPS / 72 = 2.5 PFLOP/s a GPU (the HGX B200 part: 2.25, at a lower
# power); FP32 5,760 TFLOPS / 72 = 80; HBM3e 13.4 TB / 72 = 186 GB at 576 TB/s / 72 =
# 8 TB/s; NVLink 130 TB/s / 72 = 1.8 TB/s a GPU both ways, 900 GB/s each way; CPU memory
# 17 TB LPDDR5X at 18.4 TB/s over 36 Grace = 480 GB at 512 GB/s each (2,592 Neoverse V2
# cores = 72 a Grace).
_NVL72_PAGE = "NVIDIA GB200 NVL72 specifications, https://www.nvidia.com/en-us/data-center/gb200-nvl72/"
# NVLink-C2C: 900 GB/s both ways between a Grace and its two GPUs (450 GB/s each way),
# taken as shared by the 2 GPUs: 225 GB/s each way a GPU when both offload at once (a
# single GPU measured 359 GB/s host-to-device on a GB300 desktop, stas00/ml-engineering
# network/README.md, nvbandwidth; not measured on GB200 NVL72).
_C2C_PER_GPU = 450 * GB / 2

ACCELERATORS.update({
    "b200-gb200-186gb": dict(
        name="NVIDIA Blackwell GPU in GB200 NVL72", hbm_capacity_bytes=int(186 * GIB * _USABLE),
        hbm_bytes_per_s=8000 * GB, peak_flops_bf16=2500e12, peak_flops_fp32=80e12,
        host_link_bytes_per_s=_C2C_PER_GPU, scaleup_bytes_per_s=900 * GB,
        peak_flops_fp8=5000e12, mxfp8=True, fp8_non_tn_gemm=True,
        source=(f"{_NVL72_PAGE}: rack totals / 72: 186 GB HBM3e at 8 TB/s, 2.5 PFLOP/s dense "
                "bf16 (360 PFLOPS with sparsity / 2 / 72), 5 PFLOP/s dense FP8 (720 PFLOPS "
                "with sparsity / 2 / 72; Blackwell's MX formats), 80 TFLOP/s fp32, NVLink 5 1.8 TB/s "
                "(900 GB/s each way); host link NVLink-C2C to Grace, 450 GB/s each way shared "
                "by 2 GPUs (225 GB/s each)")),
})

# Grace LPDDR5X as the DDR tier: 2 Grace a tray, 480 GB at 512 GB/s each.
_GRACE_LPDDR5X_TRAY = dict(
    device="2x 480 GB LPDDR5X (one per Grace CPU, 512 GB/s each)", devices=2,
    capacity_bytes=2 * 480 * GB, read_bytes_per_s=2 * 512 * GB, write_bytes_per_s=2 * 512 * GB,
    latency_s=100e-9)

NODES.update({
    "gb200-nvl72": dict(
        **_NVLS,
        name="NVIDIA GB200 NVL72, one compute tray",
        accelerator="b200-gb200-186gb", gpus_per_node=4, nvlink_domain_gpus=72,
        nic_bytes_per_s=4 * 50 * GB,
        tiers=dict(ddr=_GRACE_LPDDR5X_TRAY),
        source=(f"{_NVL72_PAGE} (36 Grace + 72 Blackwell GPUs, 130 TB/s NVLink Switch System, "
                "17 TB LPDDR5X); a tray is 2 GB200 superchips (4 GPUs, 2 Grace) with 4x "
                "ConnectX-7 400 Gb/s (Crusoe's MLPerf Inference v6.1 system description "
                "GB200-NVL72_GB200-186GB_aarch64x16); NVLink Switch with SHARP (NVLS) as on "
                "HGX B200, its all-reduce gain not measured on NVL72. Left out: the tray's "
                "local E1.S NVMe (4 to 8 drives by build, no drive figures read), and the "
                "144 Grace cores (Arm Neoverse V2): DeepSpeed's CPU-Adam has AVX paths only "
                "(csrc/includes/simd.h), so a host optimizer is bounded here by LPDDR5X "
                "bandwidth, not by cores"),
        price_usd_per_node_hour=42.00,
        price_source=("$42.00 per hour for one GB200 NVL72 instance of 4 GPUs (one tray) on "
                      "demand, CoreWeave's GPU price list as quoted by "
                      "https://gpu.blog/gpus/nvidia-gb200-nvl72 (read 2026); CoreWeave rents "
                      "the instance type gb200-4x in whole racks of 18 only "
                      "(https://docs.coreweave.com/docs/platform/instances/gb200)")),
})

# V100 (and older) Tensor Cores have no bf16: peak_flops_bf16 holds the fp16 peak there and
# a scenario must train in fp16 or fp32 (scenario.Scenario.from_dict refuses bf16).
NO_BF16_ACCELERATORS = frozenset({"v100-sxm2-32gb"})
