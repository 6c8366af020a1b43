// Pure logic of the scenario form: the fields, form values <-> scenario JSON, and
// mapping API error keys onto inputs. No DOM here, so it is unit-tested in Node.

import { strategyName } from "../names";
import type { CatalogEntry, ScenarioJSON } from "../types";
import { formatCount, plural } from "../units";
import {
  RECSYS_DEFAULT_VALUES,
  RECSYS_FIELD_LABELS,
  RECSYS_PLACEHOLDERS,
  isRecsys,
  recsysInputForErrorKey,
  recsysSection,
  recsysValues,
  suggestRecsysName,
} from "./recsys";

/** Form values keyed by input name (the dotted scenario path). Checkboxes are booleans. */
export type FormValues = Record<string, string | boolean>;

export const STRATEGIES: [string, string][] = [
  ["ddp", "DDP (no sharding)"],
  ["zero1", "ZeRO-1 (shard optimizer)"],
  ["zero2", "ZeRO-2 (shard optimizer + gradients)"],
  ["zero3", "ZeRO-3 (shard everything)"],
  ["fsdp_full_shard", "FSDP FULL_SHARD"],
  ["fsdp_hybrid_shard", "FSDP HYBRID_SHARD (shard in a group, replicate across)"],
  ["zero_offload", "ZeRO-Offload (optimizer in CPU memory)"],
  ["zero_infinity", "ZeRO-Infinity (ZeRO-3 + NVMe/CPU offload)"],
  ["megatron_dist_opt", "Megatron distributed optimizer (fp32 grads, optimizer sharded)"],
];

export const OFFLOAD_TARGETS: [string, string][] = [
  ["none", "none (stay in GPU HBM)"],
  ["cpu", "CPU DDR"],
  ["nvme", "NVMe"],
  ["cxl", "CXL memory"],
];

export const PRECISIONS: [string, string][] = [
  ["bf16", "bf16 (2 B)"],
  ["fp16", "fp16 (2 B)"],
  ["fp32", "fp32 (4 B)"],
];

export const OPTIMIZERS: [string, string][] = [
  ["adam", "Adam"],
  ["adamw", "AdamW"],
  ["adam_8bit", "8-bit Adam"],
  ["sgd_momentum", "SGD with momentum"],
  ["adafactor", "Adafactor"],
  ["paged_adamw", "paged AdamW (bitsandbytes)"],
  ["paged_adamw_8bit", "paged 8-bit AdamW (bitsandbytes)"],
];

/** training.preference.reference (simulation/scenario.py PreferenceSpec): blank = no preference tuning. */
export const PREFERENCE_REFERENCES: [string, string][] = [
  ["", "none (next-token training)"],
  ["separate", "DPO, separate reference copy"],
  ["adapters_off", "DPO, the base with LoRA adapters off"],
  ["precomputed", "DPO, reference log-probs precomputed"],
];

export const RECOMPUTE: [string, string][] = [
  ["none", "none"],
  ["selective", "selective (attention)"],
  ["full", "full (≈ +33% compute)"],
  ["selective_ops", "selective ops (torchtitan: every other matmul + element-wise)"],
];

/** model.position_embedding (simulation/scenario.py POSITION_EMBEDDINGS): blank = the model's own
 *  (the preset's, or the example's / imported custom model's). */
export const POSITION_EMBEDDINGS: [string, string][] = [
  ["", "the model's own"],
  ["rope", "RoPE (rotary)"],
  ["learned", "Learned"],
  ["alibi", "ALiBi (BLOOM, MPT)"],
];

/** Pipeline schedules (training.pipeline_schedule; simulation/pipeline.py SCHEDULES). */
export const PIPELINE_SCHEDULES: [string, string][] = [
  ["1f1b", "1F1B (interleaved with virtual stages)"],
  ["dualpipe", "DualPipe (DeepSeek-V3: two stages per GPU)"],
];

/** How the output layer's cross-entropy runs: it decides how many tokens × vocab copies are live. */
export const LOSS_KERNELS: [string, string][] = [
  ["torch", "PyTorch / Hugging Face (fp32 logits, 12 B per logit)"],
  ["megatron_vocab_parallel", "Megatron vocab-parallel (6 B per logit)"],
  ["fused_linear_cross_entropy", "fused linear cross-entropy (Liger, no full logits)"],
];

export const CONVENTIONS: [string, string][] = [
  ["realistic", "realistic: what DeepSpeed / FSDP / Megatron allocate"],
  ["zero_paper", "zero_paper: the ZeRO paper's 2 + 2 + 12 B/param"],
];

export const ACTIVATION_OFFLOAD: [string, string][] = [
  ["none", "none (keep in GPU HBM)"],
  ["cpu", "CPU DDR"],
];

export const CHECKPOINT_TARGETS: [string, string][] = [
  ["parallel_fs", "parallel file system (GPFS / Lustre)"],
  ["local_nvme", "local NVMe"],
  ["gds_nvme", "local NVMe via GPUDirect Storage"],
  ["remote_dram", "peer node DRAM over RDMA"],
  ["cxl_pool", "CXL memory pool"],
  ["object_store", "object store (S3-like)"],
];

export const CHECKPOINT_METHODS: [string, string][] = [
  ["blocking", "blocking: training waits for the write"],
  ["async", "async: snapshot, write in the background"],
  ["in_memory_then_flush", "in-memory copy to a peer, then flush"],
];

export const CHECKPOINT_CONTENTS: [string, string][] = [
  ["model_states", "model states (weights + optimizer)"],
  ["weights_only", "weights only"],
];

export const QUANTIZE_BITS: [string, string][] = [
  ["", "none (fp32 states as they are)"],
  ["8", "8 bits"],
  ["4", "4 bits"],
];

/** How a layer's compute time is found (training.compute_model; simulation/scenario.py COMPUTE_MODELS). */
export const COMPUTE_MODELS: [string, string][] = [
  ["", "default: from the work, or constant when a compute efficiency is set"],
  ["work", "work: GEMM shapes, attention kernel, memory-bound kernels"],
  ["constant", "constant: every FLOP at peak × compute efficiency"],
];

/** Whose modules the model is built from (training.framework; simulation/scenario.py FRAMEWORKS). */
export const FRAMEWORKS: [string, string][] = [
  ["", "default: Megatron with TP, PP, CP, EP or SP; transformers otherwise"],
  ["megatron", "Megatron-LM / Megatron-Core (Transformer Engine)"],
  ["huggingface", "Hugging Face transformers (torchao FP8)"],
];

/** Whose kernels run the element-wise work (training.software_stack; SOFTWARE_STACKS). */
export const SOFTWARE_STACKS: [string, string][] = [
  ["", "default: Megatron's for the Megatron framework, eager PyTorch otherwise"],
  ["megatron", "Megatron-LM (fused kernels)"],
  ["pytorch_eager", "PyTorch eager (unfused)"],
  ["torch_compile", "torch.compile (fused by Inductor)"],
];

/** How context-parallel ranks exchange keys and values (training.context_parallel_comm). */
export const CP_COMM_TYPES: [string, string][] = [
  ["", "default: p2p ring, each transfer beside an attention block"],
  ["p2p", "p2p ring (Megatron --cp-comm-type p2p)"],
  ["all_gather", "all-gather K/V, exposed (Megatron all_gather; Llama 3)"],
];

/** FP8 recipes (training.fp8.recipe; simulation/fp8.py RECIPES): blank = no FP8. Transformer
 *  Engine's under the Megatron framework, torchao's (tensorwise, rowwise) otherwise. */
export const FP8_RECIPES: [string, string][] = [
  ["", "off: every GEMM in the training precision"],
  ["delayed", "delayed scaling (TE DelayedScaling, amax history)"],
  ["tensorwise", "current / tensorwise scaling (TE Float8CurrentScaling; torchao default)"],
  ["blockwise", "blockwise 1×128 / 128×128 (TE Float8BlockScaling, DeepSeek-V3)"],
  ["mxfp8", "MXFP8, 32-element blocks (TE MXFP8BlockScaling; Blackwell)"],
  ["rowwise", "rowwise (torchao)"],
];

/** FP8 formats (training.fp8.format): blank = the recipe's default. */
export const FP8_FORMATS: [string, string][] = [
  ["", "the recipe's default"],
  ["hybrid", "hybrid: E4M3 forward, E5M2 gradients"],
  ["e4m3", "E4M3 forward and backward"],
];

/** A switch whose default depends on the framework: blank (the default), on or off. */
export const TRI_STATE: [string, string][] = [
  ["", "default (by framework)"],
  ["true", "on"],
  ["false", "off"],
];

/** DeepSpeed ZeRO-3 as released (strategy.deepspeed_release; DEEPSPEED_RELEASES). */
export const DEEPSPEED_RELEASES: [string, string][] = [
  ["current", "current (bucketed prefetch and reduce-scatter)"],
  ["v0.3-v0.5", "v0.3–v0.5 (Mar 2021 – Jan 2022: per-tensor fetches, per-tensor reduce-scatter)"],
];

/** The host CPU's widest vector ISA DeepSpeed's CPU-Adam builds for (cluster.cpu_isa; CPU_ISAS). */
export const CPU_ISAS: [string, string][] = [
  ["", "the node template's"],
  ["avx512", "AVX-512 (16 fp32 lanes)"],
  ["avx2", "AVX2 (8 fp32 lanes)"],
];

/** PyTorch FSDP API (strategy.fsdp_version; FSDP_VERSIONS): FSDP1 or FSDP2. */
export const FSDP_VERSIONS: [string, string][] = [
  ["1", "FSDP1 (FullyShardedDataParallel: flat parameters)"],
  ["2", "FSDP2 (fully_shard: per-parameter DTensor, copy-out / copy-in)"],
];

/** Strategies PyTorch FSDP runs (the only ones strategy.fsdp_version applies to). */
export const FSDP_KINDS = new Set(["fsdp_full_shard", "fsdp_hybrid_shard"]);

/** Strategies DeepSpeed's ZeRO-3 runs (the only ones strategy.deepspeed_release applies to). */
export const DEEPSPEED_ZERO3 = new Set(["zero3", "zero_infinity"]);

/** Integer inputs, by name. */
export const INTEGER_FIELDS = [
  "cluster.num_nodes",
  "cluster.gpus_per_node",
  "training.micro_batch_size",
  "training.global_batch_size",
  "training.seq_len",
  "training.tensor_parallel",
  "training.pipeline_parallel",
  "training.context_parallel",
  "training.expert_parallel",
  "training.moe_router_group_topk",
  "training.recompute_layers",
  "training.recompute_every",
  "training.first_pipeline_layers",
  "training.last_pipeline_layers",
  "strategy.shard_group_size",
  "strategy.prefetch_depth",
  "cluster.cpu_cores",
  "cluster.nvlink_domain_gpus",
] as const;

/** Inputs that take any number (fractions, seconds); blank = the engine's default. */
export const DECIMAL_FIELDS = [
  "training.compute_efficiency",
  "training.network_efficiency",
  "training.moe_capacity_factor",
  "training.moe_routing_imbalance",
  "strategy.prefetch_miss_rate",
  "strategy.cpu_optimizer_cores_per_gpu",
  "checkpoint.interval_s",
  "checkpoint.differential_fraction",
  "checkpoint.gpu_failure_rate_per_hour",
  "checkpoint.mtbf_s",
] as const;

export const BOOLEAN_FIELDS = ["training.flash_attention", "training.sequence_parallel", "training.overlap_param_gather",
  "training.repeat_kv", "training.fused_norm",
  "training.moe_a2a_overlap", "training.activation_func_fp8_input_store", "checkpoint.sharded"] as const;

/** On / off / blank (the framework's default) selects, sent as JSON booleans. */
export const TRI_STATE_FIELDS = ["training.overlap_grad_reduce", "training.gradient_accumulation_fusion",
  "training.fused_mlp_activation"] as const;

/** The inputs of the "Advanced" section (opened when an example sets one of them). */
export const ADVANCED_FIELDS = [
  "training.compute_efficiency",
  "training.network_efficiency",
  "training.compute_model",
  "training.software_stack",
  "training.overlap_grad_reduce",
  "training.gradient_accumulation_fusion",
  "training.overlap_param_gather",
  "strategy.prefetch_depth",
  "strategy.prefetch_miss_rate",
  "strategy.offload_activations",
  "strategy.deepspeed_release",
  "strategy.fsdp_version",
  "training.repeat_kv",
  "training.fused_norm",
  "training.fused_mlp_activation",
  "strategy.cpu_optimizer_cores_per_gpu",
  "cluster.cpu_cores",
  "cluster.cpu_isa",
  "cluster.nvlink_domain_gpus",
] as const;

/** Human label of every input (units in the label), for the error summary. */
export const FIELD_LABELS: Record<string, string> = {
  example: "Example",
  name: "Name",
  "model.preset": "Model",
  "model.position_embedding": "Position embedding",
  "cluster.node": "Node template",
  "cluster.num_nodes": "Number of nodes",
  "cluster.gpus_per_node": "GPUs per node",
  "cluster.profile": "Cluster profile",
  "strategy.kind": "Strategy",
  "strategy.shard_group_size": "Shard group size",
  "strategy.offload_optimizer": "Offload optimizer states to",
  "strategy.offload_params": "Offload parameters to",
  "training.micro_batch_size": "Micro batch size",
  "training.global_batch_size": "Global batch size",
  "training.seq_len": "Sequence length",
  "training.precision": "Precision",
  "training.optimizer": "Optimizer",
  "training.recompute": "Activation recomputation",
  "training.recompute_layers": "Checkpoint first k layers",
  "training.recompute_every": "Checkpoint every k-th layer",
  "training.recompute_modules": "Modules recomputed (selective)",
  "training.activation_func_fp8_input_store": "SwiGLU inputs stored in FP8",
  "training.preference.reference": "Preference tuning",
  "training.loss_kernel": "Loss kernel",
  "training.flash_attention": "Flash attention",
  "training.sequence_parallel": "Sequence parallel",
  "training.tensor_parallel": "Tensor parallel degree",
  "training.pipeline_parallel": "Pipeline parallel degree",
  "training.context_parallel": "Context parallel degree",
  "training.context_parallel_comm": "Context-parallel K/V exchange",
  "training.expert_parallel": "Expert parallel degree",
  "training.moe_capacity_factor": "Expert capacity factor",
  "training.moe_routing_imbalance": "Routing imbalance",
  "training.moe_router_group_topk": "Nodes per token (node-limited routing)",
  "training.moe_a2a_overlap": "Overlap expert all-to-all",
  "training.first_pipeline_layers": "Layers on the first pipeline stage",
  "training.last_pipeline_layers": "Layers on the last pipeline stage",
  "training.pipeline_layers": "Layers per pipeline stage",
  "training.pipeline_schedule": "Pipeline schedule",
  "training.compute_efficiency": "Compute efficiency",
  "training.network_efficiency": "Network efficiency",
  "training.compute_model": "Compute model",
  "training.software_stack": "Software stack",
  "training.framework": "Framework",
  "training.overlap_grad_reduce": "Overlap gradient reduction",
  "training.gradient_accumulation_fusion": "Gradient accumulation fusion",
  "training.overlap_param_gather": "Overlap parameter all-gather",
  "training.lora.rank": "LoRA rank",
  "training.lora.alpha": "LoRA alpha",
  "training.lora.dropout": "LoRA dropout",
  "training.lora.targets": "LoRA target modules",
  "training.fp8.recipe": "FP8 recipe",
  "training.fp8.format": "FP8 format",
  "training.fp8.amax_history_len": "FP8 amax history length",
  "training.fp8.param": "FP8 primary weights",
  "training.lora.base_dtype": "Frozen base storage",
  "training.lora.double_quant": "Double quantisation",
  "training.lora.quant_block_size": "Quantisation block size",
  "training.lora.adapter_dtype": "Adapter dtype",
  "training.lora.implementation": "LoRA implementation",
  "training.lora.dropout_position": "LoRA dropout position",
  "training.fused_norm": "Fused RMSNorm (Liger)",
  "training.fused_mlp_activation": "Fused MLP activation",
  "strategy.deepspeed_release": "DeepSpeed release",
  "strategy.fsdp_version": "FSDP version",
  "training.repeat_kv": "K/V heads repeated before attention",
  "strategy.cpu_optimizer_cores_per_gpu": "CPU optimizer cores per GPU",
  "cluster.cpu_cores": "Host CPU cores",
  "cluster.nvlink_domain_gpus": "NVLink domain (GPUs)",
  "cluster.cpu_isa": "Host CPU vector ISA",
  "strategy.prefetch_depth": "Prefetch depth",
  "strategy.prefetch_miss_rate": "Prefetch miss rate",
  "strategy.offload_activations": "Activation offload",
  "checkpoint.target": "Checkpoint target",
  "checkpoint.method": "Checkpoint method",
  "checkpoint.content": "Checkpoint content",
  "checkpoint.sharded": "Sharded checkpoint",
  "checkpoint.interval_s": "Checkpoint interval",
  "checkpoint.quantize_bits": "Quantize fp32 states",
  "checkpoint.differential_fraction": "Differential fraction",
  "checkpoint.gpu_failure_rate_per_hour": "GPU failure rate",
  "checkpoint.mtbf_s": "Job MTBF",
  convention: "Memory convention",
  ...RECSYS_FIELD_LABELS,
};

export const DEFAULT_VALUES: FormValues = {
  name: "",
  "model.preset": "llama2-7b",
  "model.position_embedding": "",
  "cluster.node": "dgx-h100",
  "cluster.num_nodes": "1",
  "cluster.gpus_per_node": "8",
  "cluster.profile": "",
  "strategy.kind": "zero3",
  "strategy.shard_group_size": "",
  "strategy.offload_optimizer": "none",
  "strategy.offload_params": "none",
  "training.micro_batch_size": "1",
  "training.global_batch_size": "",
  "training.seq_len": "4096",
  "training.precision": "bf16",
  "training.optimizer": "adam",
  "training.recompute": "none",
  "training.recompute_layers": "",
  "training.recompute_every": "",
  "training.recompute_modules": "",
  "training.activation_func_fp8_input_store": false,
  "training.preference.reference": "",
  "training.loss_kernel": "torch",
  // On for a new scenario (nearly every current training stack runs SDPA / FlashAttention; eager
  // attention's s x s fp32 scores overflow the default Llama-2-7B on 8 H100 by 81 GiB); the
  // engine's default stays off, so a scenario that does not say is read with ENGINE_DEFAULTS.
  "training.flash_attention": true,
  "training.sequence_parallel": false,
  "training.tensor_parallel": "1",
  "training.pipeline_parallel": "1",
  "training.context_parallel": "1",
  "training.context_parallel_comm": "",
  "training.expert_parallel": "",
  "training.moe_capacity_factor": "",
  "training.moe_routing_imbalance": "",
  "training.moe_router_group_topk": "",
  "training.moe_a2a_overlap": false,
  "training.first_pipeline_layers": "",
  "training.last_pipeline_layers": "",
  "training.pipeline_layers": "",
  "training.pipeline_schedule": "1f1b",
  "training.compute_efficiency": "",
  "training.network_efficiency": "",
  "training.compute_model": "",
  "training.software_stack": "",
  "training.framework": "",
  "training.overlap_grad_reduce": "",
  "training.gradient_accumulation_fusion": "",
  "training.overlap_param_gather": false,
  "training.lora.rank": "",
  "training.lora.alpha": "",
  "training.lora.dropout": "",
  "training.lora.targets": "",
  "training.fp8.recipe": "",
  "training.fp8.format": "",
  "training.fp8.amax_history_len": "",
  "training.fp8.param": false,
  "training.lora.base_dtype": "",
  "training.lora.double_quant": false,
  "training.lora.quant_block_size": "",
  "training.lora.adapter_dtype": "",
  "training.lora.implementation": "",
  "training.lora.dropout_position": "",
  "training.fused_norm": false,
  "training.fused_mlp_activation": "",
  "strategy.deepspeed_release": "current",
  "strategy.fsdp_version": "1",
  "training.repeat_kv": false,
  "strategy.cpu_optimizer_cores_per_gpu": "",
  "cluster.cpu_cores": "",
  "cluster.cpu_isa": "",
  "cluster.nvlink_domain_gpus": "",
  "strategy.prefetch_depth": "",
  "strategy.prefetch_miss_rate": "",
  "strategy.offload_activations": "none",
  "checkpoint.target": "parallel_fs",
  "checkpoint.method": "blocking",
  "checkpoint.content": "model_states",
  "checkpoint.sharded": true,
  "checkpoint.interval_s": "",
  "checkpoint.quantize_bits": "",
  "checkpoint.differential_fraction": "",
  "checkpoint.gpu_failure_rate_per_hour": "",
  "checkpoint.mtbf_s": "",
  convention: "realistic",
  ...RECSYS_DEFAULT_VALUES,
};

/** The engine's defaults of the inputs that may be left blank, shown as placeholders. */
export const PLACEHOLDERS: Record<string, string> = {
  "training.lora.rank": "blank = full fine-tuning (QLoRA: 8)",
  "training.recompute_layers": "all (full)",
  "training.recompute_every": "1 (every layer)",
  "training.recompute_modules": "e.g. layernorm, mla_up_proj, moe_act (blank = core_attn)",
  "training.lora.dropout": "0",
  "training.lora.targets": "q, v",
  "training.fp8.amax_history_len": "1024",
  "training.first_pipeline_layers": "blank = an even split",
  "training.last_pipeline_layers": "blank = an even split",
  "training.pipeline_layers": "e.g. 7, 8, 8, 7 (blank = an even split)",
  "training.lora.quant_block_size": "64",
  "training.compute_efficiency": "from the work",
  "training.network_efficiency": "0.8",
  "training.expert_parallel": "1",
  "training.moe_capacity_factor": "dropless",
  "training.moe_routing_imbalance": "1 (balanced)",
  "training.moe_router_group_topk": "not limited",
  "strategy.prefetch_depth": "1",
  "strategy.prefetch_miss_rate": "0",
  "strategy.cpu_optimizer_cores_per_gpu": "the node's cores / GPUs",
  "cluster.cpu_cores": "the node template's",
  "cluster.nvlink_domain_gpus": "the node template's (one host)",
  "checkpoint.interval_s": "optimal (Daly)",
  "checkpoint.differential_fraction": "1 (full)",
  "checkpoint.gpu_failure_rate_per_hour": "1.97e-5 (Llama 3)",
  "checkpoint.mtbf_s": "from the failure rate",
  ...RECSYS_PLACEHOLDERS,
};

/** Which offload targets a strategy allows, and what it starts with. */
export function offloadRules(kind: string): {
  optimizer: boolean;
  params: boolean;
  defaultOptimizer: string;
  defaultParams: string;
} {
  const zeroStage = ({ ddp: 0, zero1: 1, zero2: 2, zero_offload: 2, megatron_dist_opt: 1 } as Record<string, number>)[kind] ?? 3;
  return {
    optimizer: zeroStage >= 1,
    params: zeroStage >= 3,
    defaultOptimizer: kind === "zero_offload" ? "cpu" : kind === "zero_infinity" ? "nvme" : "none",
    defaultParams: kind === "zero_infinity" ? "nvme" : "none",
  };
}

/** Offload selects after a strategy change: defaults of the new kind, "none" where not allowed. */
export function offloadAfterStrategyChange(
  kind: string,
  current: { optimizer: string; params: string },
): { optimizer: string; params: string } {
  const rules = offloadRules(kind);
  let optimizer = rules.optimizer ? current.optimizer : "none";
  let params = rules.params ? current.params : "none";
  if (kind === "zero_offload" && optimizer === "none") optimizer = rules.defaultOptimizer;
  if (kind === "zero_infinity") {
    if (optimizer === "none") optimizer = rules.defaultOptimizer;
    if (params === "none") params = rules.defaultParams;
  }
  return { optimizer, params };
}

/** Sets `key` of `target` to the input's number, or deletes it when the input is blank. */
function setOrDelete(target: Record<string, unknown>, key: string, value: string | boolean | undefined) {
  const v = intOrRaw(value);
  if (v === undefined) delete target[key];
  else target[key] = v;
}

function intOrRaw(value: string | boolean | undefined): number | string | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text === "") return undefined;
  const n = Number(text);
  // A non-number goes to the server as typed, so its message names the field.
  return Number.isFinite(n) ? n : text;
}

const str = (v: string | boolean | undefined, fallback: string) =>
  typeof v === "string" && v !== "" ? v : fallback;

function setIf(target: Record<string, unknown>, key: string, value: unknown) {
  if (value !== undefined) target[key] = value;
}

const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * The request body for POST /api/v1/scenarios/ (and, without name, /estimate/).
 * `base` is the example the form was filled from: settings the form has no input for
 * (tier overrides, a custom model) are kept from it.
 */
export function buildRequest(
  values: FormValues,
  base?: ScenarioJSON | null,
): { name: string; scenario: ScenarioJSON } {
  const preset = str(values["model.preset"], "");
  const baseModel = isObject(base?.model) ? base.model : null;
  const model: Record<string, unknown> =
    preset === "" && baseModel ? { ...baseModel } : { preset };
  // the position embedding: blank keeps the model's own (the preset's or the custom model's)
  const positionEmbedding = str(values["model.position_embedding"], "");
  if (positionEmbedding) model.position_embedding = positionEmbedding;

  const node = str(values["cluster.node"], "");
  const baseCluster = isObject(base?.cluster) ? base.cluster : {};
  const cluster: Record<string, unknown> = {};
  // Keep the example's extra cluster settings only while its node template is chosen.
  if (baseCluster.node === node) {
    for (const [k, v] of Object.entries(baseCluster)) {
      if (!["node", "num_nodes", "gpus_per_node", "profile"].includes(k)) cluster[k] = v;
    }
  }
  cluster.node = node;
  setIf(cluster, "num_nodes", intOrRaw(values["cluster.num_nodes"]));
  setIf(cluster, "gpus_per_node", intOrRaw(values["cluster.gpus_per_node"]));
  // A cluster profile (its id): its fitted figures fill in what the scenario leaves unset.
  setIf(cluster, "profile", intOrRaw(values["cluster.profile"]));
  // The host CPU (CPU-Adam's compute); blank: the node template's.
  setOrDelete(cluster, "cpu_cores", values["cluster.cpu_cores"]);
  setOrDelete(cluster, "cpu_isa", str(values["cluster.cpu_isa"], ""));
  // The NVLink (scale-up) domain, when wider than a host (GB200 NVL72: 72); blank: the template's.
  setOrDelete(cluster, "nvlink_domain_gpus", values["cluster.nvlink_domain_gpus"]);
  // A recommendation model: its section and the cluster; the transformer's inputs are not sent.
  if (isRecsys(values)) {
    return { name: str(values.name, "").trim(), scenario: { schema: 1, recsys: recsysSection(values, base?.recsys), cluster } };
  }

  const baseTraining = isObject(base?.training) ? base.training : {};
  const training: Record<string, unknown> = { ...baseTraining };
  for (const f of INTEGER_FIELDS) {
    if (!f.startsWith("training.")) continue;
    const key = f.slice("training.".length);
    const v = intOrRaw(values[f]);
    if (v === undefined) delete training[key];
    else training[key] = v;
  }
  training.precision = str(values["training.precision"], "bf16");
  training.optimizer = str(values["training.optimizer"], "adam");
  training.recompute = str(values["training.recompute"], "none");
  training.loss_kernel = str(values["training.loss_kernel"], "torch");
  training.flash_attention = values["training.flash_attention"] === true;
  training.sequence_parallel = values["training.sequence_parallel"] === true;
  setOrDelete(training, "compute_efficiency", values["training.compute_efficiency"]);
  setOrDelete(training, "network_efficiency", values["training.network_efficiency"]);
  setOrDelete(training, "compute_model", str(values["training.compute_model"], ""));
  setOrDelete(training, "software_stack", str(values["training.software_stack"], ""));
  setOrDelete(training, "framework", str(values["training.framework"], ""));
  setOrDelete(training, "context_parallel_comm", str(values["training.context_parallel_comm"], ""));
  for (const f of TRI_STATE_FIELDS) {
    const key = f.slice("training.".length);
    const v = values[f];
    if (v === "true" || v === "false") training[key] = v === "true";
    else delete training[key];
  }
  // CP 1 is the engine's default: left out, so the JSON (and its hash) is as before
  if (training.context_parallel === 1) delete training.context_parallel;
  // off is the engine's default: left out, so the JSON (and its hash) is as before
  if (values["training.overlap_param_gather"] === true) training.overlap_param_gather = true;
  else delete training.overlap_param_gather;
  if (values["training.repeat_kv"] === true) training.repeat_kv = true;
  else delete training.repeat_kv;
  if (values["training.fused_norm"] === true) training.fused_norm = true;
  else delete training.fused_norm;
  // Expert parallelism (MoE models): blank / off are the engine's defaults, left out
  setOrDelete(training, "moe_capacity_factor", values["training.moe_capacity_factor"]);
  setOrDelete(training, "moe_routing_imbalance", values["training.moe_routing_imbalance"]);
  setOrDelete(training, "moe_router_group_topk", values["training.moe_router_group_topk"]);
  if (values["training.moe_a2a_overlap"] === true) training.moe_a2a_overlap = true;
  else delete training.moe_a2a_overlap;
  // Megatron's selective recomputation by module and SwiGLU's FP8 input store; blank / off
  // are the engine's defaults (core_attn; 16-bit), left out
  const modules = recomputeModules(values["training.recompute_modules"]);
  if (modules === undefined) delete training.recompute_modules;
  else training.recompute_modules = modules;
  if (values["training.activation_func_fp8_input_store"] === true) training.activation_func_fp8_input_store = true;
  else delete training.activation_func_fp8_input_store;
  // An uneven pipeline split and the schedule; the defaults (even, 1F1B) are left out.
  const stages = pipelineLayers(values["training.pipeline_layers"]);
  if (stages === undefined) delete training.pipeline_layers;
  else training.pipeline_layers = stages;
  const schedule = str(values["training.pipeline_schedule"], "1f1b");
  if (schedule === "1f1b") delete training.pipeline_schedule;
  else training.pipeline_schedule = schedule;
  const lora = loraSection(values);
  if (lora) training.lora = lora;
  else delete training.lora;
  const fp8 = fp8Section(values, isObject(baseTraining.fp8) ? baseTraining.fp8 : undefined);
  if (fp8) training.fp8 = fp8;
  else delete training.fp8;
  // DPO (issue #14): blank = none, left out so the JSON (and its hash) is as before
  const reference = str(values["training.preference.reference"], "");
  if (reference !== "") training.preference = { method: "dpo", reference };
  else delete training.preference;

  const kind = str(values["strategy.kind"], "zero3");
  const baseStrategy = isObject(base?.strategy) ? base.strategy : {};
  const strategy: Record<string, unknown> = { ...baseStrategy, kind };
  delete strategy.shard_group_size;
  const rules = offloadRules(kind);
  strategy.offload_optimizer = rules.optimizer ? str(values["strategy.offload_optimizer"], "none") : "none";
  strategy.offload_params = rules.params ? str(values["strategy.offload_params"], "none") : "none";
  if (kind === "fsdp_hybrid_shard") {
    setIf(strategy, "shard_group_size", intOrRaw(values["strategy.shard_group_size"]));
  }
  setOrDelete(strategy, "prefetch_depth", values["strategy.prefetch_depth"]);
  setOrDelete(strategy, "prefetch_miss_rate", values["strategy.prefetch_miss_rate"]);
  setOrDelete(strategy, "cpu_optimizer_cores_per_gpu", values["strategy.cpu_optimizer_cores_per_gpu"]);
  // the release applies to DeepSpeed's ZeRO-3 only; "current" is the default, left out
  const release = str(values["strategy.deepspeed_release"], "current");
  if (DEEPSPEED_ZERO3.has(kind) && release !== "current") strategy.deepspeed_release = release;
  else delete strategy.deepspeed_release;
  // the FSDP API applies to the fsdp_* strategies only; 1 (FSDP1) is the default, left out
  const fsdpVersion = str(values["strategy.fsdp_version"], "1");
  if (FSDP_KINDS.has(kind) && fsdpVersion !== "1") strategy.fsdp_version = Number(fsdpVersion);
  else delete strategy.fsdp_version;
  strategy.offload_activations = str(values["strategy.offload_activations"], "none");

  // Checkpoint: the form's choices over the example's other settings (detect_s, ...).
  const baseCheckpoint = isObject(base?.checkpoint) ? base.checkpoint : {};
  const checkpoint: Record<string, unknown> = { ...baseCheckpoint };
  checkpoint.content = str(values["checkpoint.content"], "model_states");
  checkpoint.target = str(values["checkpoint.target"], "parallel_fs");
  checkpoint.method = str(values["checkpoint.method"], "blocking");
  checkpoint.sharded = values["checkpoint.sharded"] !== false;
  if (checkpoint.method !== "in_memory_then_flush") delete checkpoint.flush_every;
  setOrDelete(checkpoint, "quantize_bits", values["checkpoint.quantize_bits"]);
  for (const key of ["interval_s", "differential_fraction", "gpu_failure_rate_per_hour", "mtbf_s"]) {
    setOrDelete(checkpoint, key, values[`checkpoint.${key}`]);
  }

  const scenario: ScenarioJSON = {
    schema: 1,
    model,
    cluster,
    training,
    strategy,
    checkpoint,
    convention: str(values.convention, "realistic"),
  };
  // An example with a transformer and a recommendation model keeps the latter as it is.
  if (isObject(base?.recsys)) scenario.recsys = base.recsys;
  return { name: str(values.name, "").trim(), scenario };
}

/**
 * `training.pipeline_layers` from its input: "7, 8, 8, 7" (commas or spaces) -> [7, 8, 8, 7];
 * "8*14" repeats a count. Blank: undefined (an even split). An entry that is not a whole number
 * is sent as typed, so the engine's error names it (training.pipeline_layers[2]).
 */
export function pipelineLayers(value: string | boolean | undefined): unknown[] | undefined {
  const text = str(value, "").trim();
  if (text === "") return undefined;
  const out: unknown[] = [];
  for (const tok of text.split(/[\s,]+/).filter((t) => t !== "")) {
    const rep = /^(\d+)\s*[*x×]\s*(\d+)$/.exec(tok);
    if (rep) {
      for (let i = 0; i < Number(rep[2]); i++) out.push(Number(rep[1]));
    } else {
      out.push(/^\d+$/.test(tok) ? Number(tok) : tok);
    }
  }
  return out;
}

/**
 * `training.recompute_modules` from its input: "layernorm, mla_up_proj" (commas or spaces) ->
 * ["layernorm", "mla_up_proj"]; blank: undefined (Megatron's default, core_attn). Names are
 * sent as typed, so the engine's error names a wrong one (training.recompute_modules[1]).
 */
export function recomputeModules(value: string | boolean | undefined): string[] | undefined {
  const text = str(value, "").trim();
  if (text === "") return undefined;
  return text.split(/[\s,]+/).filter((t) => t !== "");
}

/** The LoRA modules the engine knows (simulation/lora.py LORA_TARGETS). */
export const LORA_TARGETS = ["q", "k", "v", "o", "gate", "up", "down", "embeddings"] as const;

/**
 * `training.lora` from the LoRA inputs: none while the rank is blank (full fine-tuning),
 * unless a quantised base is chosen (QLoRA trains adapters: the engine's rank 8 then).
 * Targets are typed as a list ("q, k, v, o" or "q k v o"); blank = the engine's q, v.
 */
export function loraSection(values: FormValues): Record<string, unknown> | null {
  const rank = intOrRaw(values["training.lora.rank"]);
  const quantised = ["nf4", "fp4", "int8"].includes(str(values["training.lora.base_dtype"], ""));
  if (rank === undefined && !quantised) return null;
  const lora: Record<string, unknown> = rank === undefined ? {} : { rank };
  setOrDelete(lora, "alpha", values["training.lora.alpha"]);
  setOrDelete(lora, "dropout", values["training.lora.dropout"]);
  const text = str(values["training.lora.targets"], "").trim();
  if (text !== "") lora.targets = text.split(/[\s,]+/).filter((t) => t !== "");
  // QLoRA: the frozen base's storage; double quantisation and block size for a 4-bit base
  const base = str(values["training.lora.base_dtype"], "");
  if (base !== "") lora.base_dtype = base;
  if (base === "nf4" || base === "fp4") {
    if (values["training.lora.double_quant"] === true) lora.double_quant = true;
    const block = intOrRaw(values["training.lora.quant_block_size"]);
    if (block !== undefined) lora.quant_block_size = block;
  }
  const adapter = str(values["training.lora.adapter_dtype"], "");
  if (adapter !== "") lora.adapter_dtype = adapter;
  // whose LoRA forward runs (PEFT by default) and, for AutoModel's, where its dropout sits
  const impl = str(values["training.lora.implementation"], "");
  if (impl !== "") lora.implementation = impl;
  const position = str(values["training.lora.dropout_position"], "");
  if (position !== "") lora.dropout_position = position;
  return lora;
}

/**
 * `training.fp8` from the FP8 inputs: none while the recipe is blank (no FP8). Settings the
 * form has no input for (amax_compute_algo) are kept from the example's section.
 */
export function fp8Section(values: FormValues, base?: Record<string, unknown>): Record<string, unknown> | null {
  const recipe = str(values["training.fp8.recipe"], "");
  if (recipe === "") return null;
  const fp8: Record<string, unknown> = { ...(base ?? {}), recipe };
  setOrDelete(fp8, "format", str(values["training.fp8.format"], ""));
  const hist = intOrRaw(values["training.fp8.amax_history_len"]);
  if (hist === undefined || recipe !== "delayed") delete fp8.amax_history_len;
  else fp8.amax_history_len = hist;
  if (recipe !== "delayed") delete fp8.amax_compute_algo;
  if (values["training.fp8.param"] === true) fp8.param = true;
  else delete fp8.param;
  return fp8;
}


/** `training.lora.base_dtype` choices (simulation/lora.py BASE_DTYPES); blank = the
 *  training precision's 16-bit weights. */
export const LORA_BASE_DTYPES: [string, string][] = [
  ["", "16-bit (the training precision)"],
  ["bf16", "bf16"],
  ["fp16", "fp16"],
  ["nf4", "4-bit NormalFloat (QLoRA, bitsandbytes)"],
  ["fp4", "4-bit float (bitsandbytes)"],
  ["int8", "int8 (LLM.int8, bitsandbytes)"],
];

/** `training.lora.adapter_dtype` choices; blank = PEFT's fp32 adapters. */
export const LORA_ADAPTER_DTYPES: [string, string][] = [
  ["", "PEFT default (fp32)"],
  ["fp32", "fp32"],
  ["bf16", "bf16 (the QLoRA paper's qlora.py)"],
  ["fp16", "fp16"],
];

/** `training.lora.implementation` choices (simulation/lora.py IMPLEMENTATIONS); blank = PEFT. */
export const LORA_IMPLEMENTATIONS: [string, string][] = [
  ["", "Hugging Face PEFT (default)"],
  ["peft", "Hugging Face PEFT"],
  ["automodel", "NeMo AutoModel LinearLoRA"],
];

/** `training.lora.dropout_position` choices; blank = the implementation's own. */
export const LORA_DROPOUT_POSITIONS: [string, string][] = [
  ["", "the implementation's (PEFT: input, AutoModel: output)"],
  ["pre", "on the adapter's input"],
  ["post", "on the adapter's output (AutoModel)"],
];

/** Where the new-scenario form's default differs from the engine's (simulation/scenario.py):
 *  a scenario that leaves the setting out means the engine's. */
export const ENGINE_DEFAULTS: Partial<FormValues> = { "training.flash_attention": false };

/** Form values for a scenario (an example's): what the form can show of it. */
export function valuesFromScenario(scenario: ScenarioJSON, name = ""): FormValues {
  const v: FormValues = { ...DEFAULT_VALUES, ...ENGINE_DEFAULTS, name } as FormValues;
  const model = scenario.model;
  if (typeof model === "string") v["model.preset"] = model;
  else if (isObject(model)) v["model.preset"] = typeof model.preset === "string" ? model.preset : "";
  if (isObject(model) && typeof model.position_embedding === "string") {
    v["model.position_embedding"] = model.position_embedding;
  }
  const sections: Record<string, unknown> = {
    cluster: scenario.cluster,
    training: scenario.training,
    strategy: scenario.strategy,
    checkpoint: scenario.checkpoint,
  };
  for (const [section, body] of Object.entries(sections)) {
    if (!isObject(body)) continue;
    for (const [k, val] of Object.entries(body)) {
      const key = `${section}.${k}`;
      if (!(key in DEFAULT_VALUES)) continue;
      if (typeof DEFAULT_VALUES[key] === "boolean") v[key] = val === true;
      else if (val !== null && val !== undefined && typeof val !== "object") v[key] = String(val);
    }
  }
  if (typeof scenario.convention === "string") v.convention = scenario.convention;
  const stages = isObject(scenario.training) ? scenario.training.pipeline_layers : undefined;
  if (Array.isArray(stages)) v["training.pipeline_layers"] = stages.join(", ");
  const modules = isObject(scenario.training) ? scenario.training.recompute_modules : undefined;
  if (Array.isArray(modules)) v["training.recompute_modules"] = modules.join(", ");
  const lora = isObject(scenario.training) ? scenario.training.lora : undefined;
  if (isObject(lora)) {
    for (const k of ["rank", "alpha", "dropout"]) {
      if (typeof lora[k] === "number") v[`training.lora.${k}`] = String(lora[k]);
    }
    if (Array.isArray(lora.targets)) v["training.lora.targets"] = lora.targets.join(", ");
    for (const k of ["base_dtype", "adapter_dtype", "implementation", "dropout_position"]) {
      if (typeof lora[k] === "string") v[`training.lora.${k}`] = lora[k] as string;
    }
    if (typeof lora.quant_block_size === "number") v["training.lora.quant_block_size"] = String(lora.quant_block_size);
    v["training.lora.double_quant"] = lora.double_quant === true;
  }
  const fp8 = isObject(scenario.training) ? scenario.training.fp8 : undefined;
  if (isObject(fp8)) {
    for (const k of ["recipe", "format", "amax_history_len"]) {
      if (typeof fp8[k] === "string" || typeof fp8[k] === "number") v[`training.fp8.${k}`] = String(fp8[k]);
    }
    v["training.fp8.param"] = fp8.param === true;
  }
  const preference = isObject(scenario.training) ? scenario.training.preference : undefined;
  if (isObject(preference) && typeof preference.reference === "string") {
    v["training.preference.reference"] = preference.reference;
  }
  // Strategies that imply an offload target when none is written.
  const kind = String(v["strategy.kind"]);
  const strategy = isObject(scenario.strategy) ? scenario.strategy : {};
  const rules = offloadRules(kind);
  if (strategy.offload_optimizer === undefined) v["strategy.offload_optimizer"] = rules.defaultOptimizer;
  if (strategy.offload_params === undefined) v["strategy.offload_params"] = rules.defaultParams;
  return Object.assign(v, recsysValues(scenario));
}

/** Settings of a scenario that the form has no input for, as dotted paths (shown to the user). */
export function settingsNotOnForm(scenario: ScenarioJSON): string[] {
  const out: string[] = [];
  const walk = (value: unknown, path: string) => {
    if (isObject(value)) {
      for (const [k, v] of Object.entries(value)) walk(v, path ? `${path}.${k}` : k);
    } else if (!(path in DEFAULT_VALUES) && path !== "schema" && path !== "name") {
      out.push(path);
    }
  };
  const model = scenario.model;
  if (isObject(model) && typeof model.preset === "string") {
    const { preset: _preset, ...rest } = model;
    walk({ ...scenario, model: rest }, "");
  } else {
    walk(scenario, "");
  }
  // the form's preference input writes method "dpo", the only method
  return out.filter((p) => p !== "model" && !p.startsWith("model.preset") && p !== "training.preference.method");
}

/**
 * The input name an API error key belongs to: "scenario.training.global_batch_size" ->
 * "training.global_batch_size"; "name" -> "name". Whole-section keys point at the
 * section's main input ("scenario.model" -> "model.preset").
 */
export function inputNameForErrorKey(key: string): string {
  let k = key.startsWith("scenario.") ? key.slice("scenario.".length) : key;
  if (k === "scenario") k = "";
  const sectionMain: Record<string, string> = {
    model: "model.preset",
    cluster: "cluster.node",
    "cluster.accelerator": "cluster.node",
    strategy: "strategy.kind",
    checkpoint: "checkpoint.target",
    "checkpoint.target_write_bytes_per_s": "checkpoint.target",
    "checkpoint.flush_every": "checkpoint.method",
  };
  if (k === "training.lora") return "training.lora.rank";
  if (k === "training.fp8") return "training.fp8.recipe";
  if (k.startsWith("training.preference")) return "training.preference.reference";
  if (k.startsWith("training.lora.targets")) return "training.lora.targets";   // targets[1]
  if (k.startsWith("training.pipeline_layers")) return "training.pipeline_layers";   // [3]
  if (k.startsWith("training.recompute_modules")) return "training.recompute_modules";   // [1]
  return sectionMain[k] ?? recsysInputForErrorKey(k) ?? k;
}

/** The parameter count of a model catalog entry, if its spec states it. */
export function modelParamCount(entry: CatalogEntry): number | null {
  const spec = entry.spec ?? {};
  for (const key of ["num_params", "param_count", "params"]) {
    const v = (spec as Record<string, unknown>)[key] ?? (entry as unknown as Record<string, unknown>)[key];
    if (typeof v === "number" && Number.isFinite(v) && v > 0) return v;
  }
  return null;
}

/** The option text of a model: "Llama-2-70B — 69.0 B params" or "… — 80 layers, hidden 8192". */
export function modelOptionLabel(entry: CatalogEntry): string {
  const n = modelParamCount(entry);
  if (n !== null) return `${entry.name} — ${formatCount(n)} params`;
  const spec = entry.spec as Record<string, unknown>;
  if (typeof spec?.num_layers === "number" && typeof spec?.hidden_size === "number") {
    return `${entry.name} — ${spec.num_layers} layers, hidden ${spec.hidden_size}`;
  }
  return entry.name;
}

/** The option text of a node: "NVIDIA DGX H100 — 8 GPUs, tiers: ddr, nvme"; a host inside a
 * wider NVLink domain (cluster.nvlink_domain_gpus) says so: "— 4 GPUs, 72-GPU NVLink domain, …". */
export function nodeOptionLabel(entry: CatalogEntry): string {
  const spec = entry.spec as Record<string, unknown>;
  const gpus = typeof spec?.gpus_per_node === "number" ? plural(spec.gpus_per_node, "GPU") : null;
  const domain = spec?.nvlink_domain_gpus;
  const wide = typeof domain === "number" && domain !== spec?.gpus_per_node ? `${domain}-GPU NVLink domain` : null;
  const tiers = isObject(spec?.tiers) ? Object.keys(spec.tiers) : [];
  const bits = [gpus, wide, tiers.length ? `tiers: ${tiers.map(tierName).join(", ")}` : null].filter(Boolean);
  return bits.length ? `${entry.name} — ${bits.join(", ")}` : entry.name;
}

const TIER_NAMES: Record<string, string> = { ddr: "DDR", nvme: "NVMe", cxl: "CXL", pmem: "PMEM" };
export const tierName = (key: string) => TIER_NAMES[key] ?? key.toUpperCase();

/** The node's GPUs per node, from its catalog spec. */
export function nodeGpus(entry: CatalogEntry | undefined): number | null {
  const v = (entry?.spec as Record<string, unknown> | undefined)?.gpus_per_node;
  return typeof v === "number" ? v : null;
}

/** The tiers a node template has ("ddr", "nvme", "cxl"). */
export function nodeTiers(entry: CatalogEntry | undefined): string[] {
  const t = (entry?.spec as Record<string, unknown> | undefined)?.tiers;
  return isObject(t) ? Object.keys(t) : [];
}

/** A default scenario name from the choices: "Llama-2-70B · 2× NVIDIA DGX H100 · ZeRO-3" (display names, not ids). */
export function suggestName(values: FormValues, models: CatalogEntry[], nodes: CatalogEntry[],
                            customModelName?: string): string {
  // the blank entry: the inline model of the example or of an imported config.json
  const custom = values["model.preset"] === "" && customModelName ? customModelName : "custom model";
  const model = models.find((m) => m.slug === values["model.preset"])?.name ?? String(values["model.preset"] || custom);
  const node = nodes.find((n) => n.slug === values["cluster.node"])?.name ?? String(values["cluster.node"]);
  if (isRecsys(values)) return suggestRecsysName(values, node);
  return `${model} · ${values["cluster.num_nodes"]}× ${node} · ${strategyName(String(values["strategy.kind"]))}`;
}

/** Whether any input of the "Advanced" section differs from its default (then it is shown open). */
export function hasAdvancedValues(values: FormValues): boolean {
  return ADVANCED_FIELDS.some((k) => values[k] !== undefined && values[k] !== DEFAULT_VALUES[k]);
}
