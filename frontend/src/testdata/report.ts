// A hand-made engine report for unit tests. Numbers are round so expectations can be
// checked by hand: HBM per GPU needs 8 + 8 + 60 + 10 + 5 = 91 GB of 85 GB (over by 6 GB).
import type { Report } from "../types";

export const GIB = 2 ** 30;
export const DDR_CAPACITY = 2048 * GIB; // 2,199,023,255,552 bytes
export const NVME_CAPACITY = 8 * 3.84e12; // 30.72e12 bytes

export function sampleReport(): Report {
  return {
    schema: 1,
    engine_version: "0.1.0",
    fits: false,
    violations: [
      {
        tier: "hbm",
        scope: "per_gpu",
        required_bytes: 9.1e10,
        capacity_bytes: 8.5e10,
        over_bytes: 6e9,
        message: "HBM per GPU needs 91.0 GB but has 85.0 GB (over by 6.0 GB)",
      },
    ],
    model: { name: "Llama-2-70B", num_params: 68976648192, num_layers: 80, hidden_size: 8192 },
    parallelism: {
      num_gpus: 16, data_parallel: 16, tensor_parallel: 1, pipeline_parallel: 1, shard_degree: 16,
      global_batch_size: 32, micro_batch_size: 1, grad_accumulation_steps: 2,
    },
    convention: {
      name: "realistic",
      description: "bf16 weights and grads, fp32 master weights and Adam moments",
      bytes_per_param: { params: 2, grads: 2, master_weights: 4, optimizer_states: 8, total: 16 },
    },
    memory: {
      per_gpu: {
        hbm: {
          params_bytes: 8e9, grads_bytes: 8e9, optimizer_bytes: 6e10, activations_bytes: 1e10,
          buffers_bytes: 5e9, total_bytes: 9.1e10, capacity_bytes: 8.5e10, free_bytes: -6e9,
          present: true,
          parts: [
            { name: "bf16 parameters (shard)", category: "params", bytes: 8e9, note: "sharded over 16 ranks", phase: "persistent" },
            { name: "bf16 gradients (shard)", category: "grads", bytes: 8e9, note: "sharded over 16 ranks", phase: "persistent" },
            { name: "fp32 master weights (shard)", category: "optimizer", bytes: 2e10, note: "", phase: "persistent" },
            { name: "Adam m and v (shard)", category: "optimizer", bytes: 4e10, note: "", phase: "persistent" },
            { name: "activations (1 micro-batch)", category: "activations", bytes: 1e10, note: "no recomputation", phase: "fwd_bwd" },
            { name: "all-gather buffers", category: "buffers", bytes: 5e9, phase: "fwd_bwd" },
          ],
        },
      },
      per_node: {
        ddr: {
          params_bytes: 0, grads_bytes: 0, optimizer_bytes: 0, activations_bytes: 0,
          buffers_bytes: 2e9, total_bytes: 2e9, capacity_bytes: DDR_CAPACITY,
          free_bytes: DDR_CAPACITY - 2e9, present: true,
          parts: [{ name: "pinned staging buffers", category: "buffers", bytes: 2e9, note: null, phase: "persistent" }],
        },
        nvme: {
          params_bytes: 0, grads_bytes: 0, optimizer_bytes: 0, activations_bytes: 0,
          buffers_bytes: 0, total_bytes: 0, capacity_bytes: NVME_CAPACITY,
          free_bytes: NVME_CAPACITY, present: true, parts: [],
        },
        cxl: {
          params_bytes: 0, grads_bytes: 0, optimizer_bytes: 0, activations_bytes: 0,
          buffers_bytes: 0, total_bytes: 0, capacity_bytes: 0, free_bytes: 0, present: false, parts: [],
        },
      },
    },
    notes: ["Activations assume no recomputation.", "Buffers include NCCL and all-gather scratch."],
  };
}

/** The same run made to fit: HBM per GPU 62.1 GB of 85 GB. */
export function fittingReport(): Report {
  const r = sampleReport();
  r.fits = true;
  r.violations = [];
  const hbm = r.memory.per_gpu!.hbm!;
  hbm.optimizer_bytes = 3.11e10;
  hbm.total_bytes = 6.21e10;
  hbm.free_bytes = 8.5e10 - 6.21e10;
  return r;
}

/**
 * The same run with a simulated step, a timeline, the offload-bandwidth analysis and a
 * checkpoint, numbers round enough to check by hand: a 10 s step = 6 s compute + 3 s exposed
 * communication + 0.5 s CPU optimizer + 0.5 s stall.
 */
export function stepReport(): Report {
  const r = fittingReport();
  r.step = {
    available: true,
    time_s: 10,
    breakdown_s: { compute: 6, exposed_comm: 3, exposed_offload: 0, cpu_optimizer: 0.5, stall: 0.5, pipeline_bubble: 0 },
    micro_batch_s: 5,
    last_micro_batch_s: 5.2,
    micro_batches: 2,
    model_flops: 5.8e16,
  };
  r.throughput = { tokens_per_s: 13107.2, samples_per_s: 3.2 }; // 32 x 4096 tokens / 10 s
  r.mfu = 0.42;
  r.links = [
    { name: "pcie_h2d", bytes_per_s: 55.4e9, busy_s: 0, bytes: 0, utilization: 0 },
    { name: "nvlink", bytes_per_s: 360e9, busy_s: 1, bytes: 3.6e11, utilization: 0.1 },
    // 3.2e11 B moved of 40e9 B/s x 10 s = 4e11: 80 % of its bandwidth
    { name: "nic", bytes_per_s: 40e9, busy_s: 8, bytes: 3.2e11, utilization: 0.8, bandwidth_fraction: 0.8 },
  ];
  r.verdict = {
    bottleneck: "exposed_comm",
    message: "exposed comm costs 3.0 s of a 10.0 s step (30%). The busiest link is nic (80% busy at 40.0 GB/s per GPU): more of it shortens the step.",
    buy_more_of: "nic",
  };
  r.timeline = {
    tasks: [
      { name: "fwd L0 all-gather", lane: "nic", kind: "allgather", start_s: 0, end_s: 0.04 },
      { name: "forward L0", lane: "gpu", kind: "compute", start_s: 0.04, end_s: 0.1 },
      { name: "fwd L1 all-gather", lane: "nic", kind: "allgather", start_s: 0.04, end_s: 0.08 },
      { name: "params in", lane: "nvme_read > pcie_h2d", kind: "offload", start_s: 0, end_s: 0.05 },
      { name: "optimizer states out (1/2)", lane: "nvme_write", kind: "offload", start_s: 0.1, end_s: 0.3 },
      { name: "optimizer states out (2/2)", lane: "nvme_write", kind: "offload", start_s: 0.12, end_s: 0.25 },
      { name: "CPU Adam", lane: "ddr", kind: "cpu_optimizer", start_s: 0.1, end_s: 0.12 },
      { name: "optimizer step", lane: "gpu", kind: "optimizer", start_s: 0.1, end_s: 0.11 },
      { name: "odd one", lane: "mystery_link", kind: "mystery", start_s: 0.3, end_s: 0.31 },
    ],
    makespan_s: 0.31,
    truncated: false,
  };
  r.offload_bandwidth = {
    bandwidth_bytes_per_s: [1e9, 1e10, 1e11, 1e12],
    target_efficiency: 0.9,
    achievable_flops: 5e14,
    curves: {
      params_grads: { arithmetic_intensity: 4096, efficiency: [0.01, 0.1, 0.5, 0.9], bandwidth_needed_bytes_per_s: 1.1e12 },
      optimizer_states: { arithmetic_intensity: 1024, efficiency: [0.002, 0.02, 0.2, 0.7], bandwidth_needed_bytes_per_s: 4.4e12 },
      activations: { arithmetic_intensity: 196608, efficiency: [0.3, 0.8, 0.97, 0.997], bandwidth_needed_bytes_per_s: 2.3e10 },
    },
    tiers: [
      { tier: "ddr", bytes_per_s: 76.8e9, efficiency: { params_grads: 0.366, optimizer_states: 0.126, activations: 0.965 } },
      { tier: "nvme", bytes_per_s: 6.9e9, efficiency: { params_grads: 0.049, optimizer_states: 0.0128, activations: 0.714 } },
    ],
  };
  r.checkpoint = {
    size_bytes: 1e12,
    full_size_bytes: 1e12,
    shard_bytes: 6.25e10, // 1e12 / 16 writers
    size: { writers: 16 },
    snapshot_s: 1.2,
    write_s: 17.4,
    replicate_s: 0,
    stall_s: 1.2,
    background_s: 17.4,
    interval_s: 5400, // 1 h 30 min
    interval_source: "daly",
    interval_steps: 540,
    young_interval_s: 5000, // 1 h 23 min
    daly_interval_s: 5400,
    mtbf_s: 3.6e6, // 1,000 h = 41.7 days
    gpu_failure_rate_per_hour: 6.25e-5, // 1 / (1000 h x 16 GPUs)
    restart_s: 440,
    restart: { detect_s: 120, reload_s: 20, warmup_s: 300 },
    goodput: 0.995,
    waste_fraction: 0.005,
    waste_parts: { checkpoint: 0.002, rework: 0.0025, restart: 0.0005 },
    target: {
      kind: "parallel_fs", scope: "cluster", write_bytes_per_s: 57.5e9, read_bytes_per_s: 57.5e9,
      capacity_bytes: null, persistent: true, network: true, source: "GPFS at JeanZay",
    },
    traffic: { host_link_bytes_per_gpu: 6.25e10, nic_bytes_per_node: 5e11, mean_nic_bytes_per_s: 9.26e7 },
    curve: { interval_s: [360, 3600, 5400, 36000], goodput: [0.98, 0.994, 0.995, 0.99] },
    monte_carlo: { mean_goodput: 0.9948, p5: 0.99, p50: 0.995, p95: 0.997, runs: 200, run_length_s: 2592000 },
    training_slowdown: { per_step_s: 0.5, steps_overlapped: 2, per_checkpoint_s: 1.0, note: "steps that overlap the background write" },
    notes: ["Async: a failure during the background write loses that checkpoint."],
    spec: { content: "model_states", sharded: true, differential_fraction: 1.0, target: "parallel_fs", method: "async" },
  };
  return r;
}
