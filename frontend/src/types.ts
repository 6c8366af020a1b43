// Shapes of what the REST API sends and takes. The engine's report is SI: bytes, seconds.

export const CATEGORIES = ["params", "grads", "optimizer", "activations", "buffers"] as const;
export type Category = (typeof CATEGORIES)[number];

export type TierKey = "hbm" | "ddr" | "nvme" | "cxl" | "pmem";
export type Scope = "per_gpu" | "per_node";

export interface Part {
  name: string;
  category: Category | string;
  bytes: number;
  note?: string | null;
  phase?: string | null;
}

export interface TierUsage {
  params_bytes?: number;
  grads_bytes?: number;
  optimizer_bytes?: number;
  activations_bytes?: number;
  buffers_bytes?: number;
  total_bytes: number;
  capacity_bytes: number;
  free_bytes?: number;
  present: boolean;
  /** The moment the tier peaks in: loss | backward | step | checkpoint | load | persistent. */
  peak_phase?: string;
  /** Tensors only (torch.cuda.max_memory_allocated) and what nvidia-smi shows (= total_bytes). */
  allocated_bytes?: number;
  reserved_bytes?: number;
  parts?: Part[];
}

/** One row of memory.per_stage: consecutive pipeline ranks with the same layers and HBM total. */
export interface PipelineStage {
  /** first | middle | last (DualPipe: "ends", the two ranks holding stages 0 and p-1, and "middle"). */
  stage: string;
  /** The ranks, "0" or "2-15". */
  stages: string;
  num_stages: number;
  layers: number;
  micro_batches_in_flight: number;
  hbm_total_bytes: number;
  hbm_model_state_bytes?: number;
  hbm_activation_bytes?: number;
  hbm_peak_phase?: string;
}

export interface Violation {
  tier: string;
  scope: string;
  required_bytes: number;
  capacity_bytes: number;
  over_bytes: number;
  message: string;
}

export interface Report {
  schema: number;
  engine_version?: string;
  fits: boolean;
  /** fits | tight | does_not_fit (older stored reports lack it). */
  fit_state?: "fits" | "tight" | "does_not_fit";
  violations?: Violation[];
  model?: { name?: string; num_params?: number; num_layers?: number; hidden_size?: number; lora_implementation?: string; trainable_params?: number };
  parallelism?: {
    num_gpus?: number;
    data_parallel?: number;
    tensor_parallel?: number;
    pipeline_parallel?: number;
    shard_degree?: number;
    global_batch_size?: number;
    micro_batch_size?: number;
    grad_accumulation_steps?: number;
    /** With expert parallelism only (simulation/parallel.py Layout). */
    expert_parallel?: number;
    expert_tensor_parallel?: number;
    expert_data_parallel?: number;
    expert_shard_degree?: number;
  };
  convention?: {
    name: string;
    description?: string;
    bytes_per_param?: Record<string, number> & { dtypes?: Record<string, string> };
  };
  memory: {
    per_gpu?: Partial<Record<TierKey, TierUsage>>;
    per_node?: Partial<Record<TierKey, TierUsage>>;
    /** Half-width of the tight band (fraction of capacity) and the tiers inside it. */
    band?: number;
    tight?: { tier: string; scope: string; peak_phase: string; largest_part?: string | null; message: string }[];
    /** With a pipeline: the worst stage's role and rank (the verdict is its), and every stage. */
    stage?: string;
    stage_index?: number;
    per_stage?: PipelineStage[];
  };
  cross_checks?: Record<string, unknown>;
  notes?: string[];
  step?: Step;
  throughput?: { tokens_per_s?: number; samples_per_s?: number };
  /** Model FLOPs utilization, 0..1. */
  mfu?: number | null;
  links?: Link[];
  verdict?: StepVerdict;
  timeline?: Timeline;
  offload_bandwidth?: OffloadBandwidth;
  checkpoint?: Checkpoint;
}

// ------------------------------------------------------------------ step time
export const BREAKDOWN_KEYS = [
  "compute",
  "exposed_comm",
  "exposed_offload",
  "cpu_optimizer",
  "stall",
  "pipeline_bubble",
] as const;
export type BreakdownKey = (typeof BREAKDOWN_KEYS)[number];

export interface Step {
  available: boolean;
  reason?: string;
  time_s?: number;
  breakdown_s?: Partial<Record<BreakdownKey, number>> & Record<string, number>;
  micro_batch_s?: number;
  last_micro_batch_s?: number;
  /** Seconds after the last micro-batch's last compute: exposed reduction, optimizer step, its offload I/O. */
  optimizer_phase_s?: number;
  micro_batches?: number;
  /** The peak MFU divides by: that of the GEMMs' precision (FP8 with training.fp8); with FP8
   * also the MFU over the 16-bit peak. */
  mfu_peak?: { precision: string; flops_per_s: number; mfu_16bit_peak?: number };
  model_flops?: number;
  /** With the optimizer offloaded: what bounds the CPU optimizer step (the cores or DDR). */
  cpu_optimizer?: CpuOptimizer;
  /** With context parallelism: the K/V exchange of one micro-batch (simulation/context_parallel.py). */
  context_parallel?: ContextParallelExchange;
  /** MoE with expert parallelism (simulation/experts.py): the all-to-alls and the busiest rank. */
  expert_parallel?: ExpertParallel;
  /** With a pipeline: its schedule, layers per stage, the stage that paces it, the bubble. */
  pipeline?: { schedule: string; stage_layers: number[]; slowest_stage: number; bubble_micro_batches: number };
  /** Where measured steps of this kind lay around the prediction [lo, hi] (s): simulation/errormodel.py. */
  time_band_s?: [number, number];
  band?: StepBand;
  /** False when the scenario lies outside what the band's cases covered (reasons in outside_validation). */
  validated?: boolean;
  outside_validation?: string[];
  /** Which compute model ran and one layer's seconds (simulation/step.py compute_summary). */
  compute?: StepCompute;
}

/** One layer's compute as the engine counted it; `fp8` only under training.fp8. */
export interface StepCompute {
  model: string;
  layer_fwd_s: number;
  layer_bwd_s: number;
  head_s: number;
  fp8_cast_fwd_s?: number;
  fp8_cast_bwd_s?: number;
  fp8?: {
    recipe: string;
    format: string;
    implementation: "transformer_engine" | "torchao";
    /** Achievable FP8 matmul FLOP/s (work model), or null (constant model). */
    gemm_flops: number | null;
    peak_flops_fp8: number;
    amax_reduction_s: number;
    source: string;
  };
}

/** The context-parallel K/V exchange (step.context_parallel), seconds per micro-batch unless named. */
export interface ContextParallelExchange {
  degree: number;
  /** p2p (the ring) or all_gather */
  comm: string;
  /** nvlink or nic */
  link: string;
  kv_chunk_bytes: number;
  exposed_s: number;
  hidden_s: number;
  bytes: number;
  layers: number;
  exposed_per_step_s: number;
  source: string;
}

/** The step's expert-parallel figures (simulation/experts.py summary); seconds per micro-batch. */
export interface ExpertParallel {
  expert_parallel: number;
  expert_tensor_parallel: number;
  expert_data_parallel: number;
  experts_per_rank: number;
  capacity_factor: number | null;
  dropless: boolean;
  pad_to_capacity: boolean;
  routing_imbalance: number;
  /** Tokens the busiest rank's experts take over the mean. */
  token_factor: number;
  a2a_overlap: boolean;
  imbalance_compute_s: number;
  source: string;
  alltoall_s?: number;
  alltoall_exposed_s?: number;
  per_alltoall_s?: number;
  alltoalls_per_layer?: number;
  etp_collective_s?: number;
  dispatch_bytes?: number;
  ep_ranks_per_node?: number;
  ep_nodes?: number;
  link?: string;
}

/** The error model's band for one kind of scenario. */
export interface StepBand {
  /** tensor_pipeline | sharded | offload | recsys | any */
  kind: string;
  label: string;
  /** GPU generations the cases ran on, e.g. "A100". */
  on: string;
  /** [lo, hi] as fractions of the prediction, e.g. [-0.12, 0.24]. */
  error_rel: [number, number];
  cases: number;
  source: string;
}

export interface CpuOptimizer {
  /** "cpu_adam": the cores' rate (CPU-Adam, or torch's AdamW under FSDP); "ddr": the GPU's DDR share. */
  bound: "cpu_adam" | "ddr";
  /** Which CPU optimizer runs: DeepSpeed's CPU-Adam, or torch.optim.AdamW under FSDP's CPU offload. */
  implementation?: "deepspeed_cpu_adam" | "torch_adamw";
  /** DDR bytes one parameter's update moves (30 for CPU-Adam, 80 for torch's for-loop AdamW). */
  bytes_per_param?: number;
  /** The bound in words, as the engine writes it. */
  message: string;
  params?: number;
  cores_per_gpu?: number | null;
  compute_params_per_s?: number | null;
  ddr_params_per_s?: number;
  alone_s?: number;
}

/** One link of the node as the step used it; rates and bytes are per GPU. */
export interface Link {
  name: string;
  bytes_per_s: number;
  busy_s: number;
  bytes?: number;
  /** Share of the step a transfer was on the link, 0..1. */
  utilization: number;
  /** Bytes over bandwidth x step: the share of the link's capacity used, 0..1 (engine 0.14+). */
  bandwidth_fraction?: number;
}

export interface StepVerdict {
  bottleneck?: string;
  message?: string;
  buy_more_of?: string | null;
  /** When the CPU optimizer is the bottleneck: which bound it. */
  cpu_optimizer_bound?: "cpu_adam" | "ddr";
}

// ------------------------------------------------------------------ timeline
export interface TimelineTask {
  name: string;
  /** A stream ("gpu") or a link ("nic"), or a path of links ("nvme_read > pcie_h2d"). */
  lane: string;
  kind: string;
  start_s: number;
  end_s: number;
}

export interface Timeline {
  tasks: TimelineTask[];
  makespan_s?: number;
  truncated?: boolean;
}

// ------------------------------------------------------------------ offload bandwidth
export const STATE_KINDS = ["params_grads", "optimizer_states", "activations"] as const;
export type StateKind = (typeof STATE_KINDS)[number];

export interface OffloadBandwidth {
  bandwidth_bytes_per_s: number[];
  target_efficiency?: number;
  achievable_flops?: number;
  curves: Partial<Record<StateKind, {
    arithmetic_intensity?: number;
    efficiency: number[];
    bandwidth_needed_bytes_per_s?: number;
  }>>;
  tiers?: { tier: string; bytes_per_s: number; efficiency?: Partial<Record<StateKind, number>> }[];
}

// ------------------------------------------------------------------ checkpoint
export interface MonteCarlo {
  mean_goodput: number;
  std_goodput?: number;
  p5: number;
  p50?: number;
  p95: number;
  runs: number;
  run_length_s?: number;
  expected_failures_per_run?: number;
}

export interface Checkpoint {
  size_bytes: number;
  full_size_bytes?: number;
  shard_bytes?: number;
  size?: { writers?: number; bytes_per_param?: Record<string, number>; parts_bytes?: Record<string, number> };
  snapshot_s?: number;
  /** Per state: the tier it is read from and the seconds that takes (they add to snapshot_s). */
  snapshot?: Record<string, { tier: "hbm" | "ddr" | "cxl" | "nvme"; bytes_per_gpu: number; s: number }>;
  write_s?: number;
  replicate_s?: number;
  stall_s: number;
  background_s?: number;
  durable_lag_s?: number;
  interval_s: number;
  interval_source?: string;
  interval_steps?: number;
  young_interval_s?: number;
  daly_interval_s?: number;
  mtbf_s?: number;
  gpu_failure_rate_per_hour?: number;
  restart_s?: number;
  restart?: { detect_s?: number; reload_s?: number; warmup_s?: number };
  goodput: number;
  waste_fraction?: number;
  waste_parts?: Record<string, number>;
  target?: {
    kind: string;
    scope?: string;
    write_bytes_per_s?: number | null;
    read_bytes_per_s?: number | null;
    capacity_bytes?: number | null;
    persistent?: boolean;
    network?: boolean;
    source?: string;
    stored_bytes?: number;
    fits?: boolean | null;
  };
  traffic?: Record<string, number>;
  curve?: { interval_s: number[]; goodput: number[] };
  monte_carlo?: MonteCarlo | null;
  training_slowdown?: { per_step_s: number; steps_overlapped: number; per_checkpoint_s: number; note?: string };
  notes?: string[];
  spec?: Record<string, unknown>;
}

export type RunStatus = "queued" | "pending" | "running" | "succeeded" | "failed" | string;

export interface Run {
  id: number | string;
  status: RunStatus;
  progress?: number | null;
  result?: Report | null;
  error?: string | null;
  scenario?: number | string | null;
  created_at?: string;
  started_at?: string | null;
  finished_at?: string | null;
}

export interface CatalogEntry {
  slug: string;
  name: string;
  spec: Record<string, unknown>;
  source?: string | null;
  notes?: string | null;
}

/** A cluster profile as GET /api/v1/cluster-profiles/ lists it (only what the form shows). */
export interface ClusterProfileEntry {
  id: number;
  name: string;
  owner: string | null;
  figures: Record<string, unknown>;
}

/** A scenario as the API takes it (schema 1); only what the form sets is typed. */
export interface ScenarioJSON {
  schema?: number;
  /** A transformer; a recommendation model is `recsys` instead (or as well). */
  model?: Record<string, unknown>;
  cluster: Record<string, unknown>;
  training?: Record<string, unknown>;
  strategy?: Record<string, unknown>;
  convention?: string;
  [key: string]: unknown;
}

export interface Example {
  name: string;
  scenario: ScenarioJSON;
}
