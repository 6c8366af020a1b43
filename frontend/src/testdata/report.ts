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
            { name: "activations (1 micro-batch)", category: "activations", bytes: 1e10, note: "no recomputation", phase: "peak" },
            { name: "all-gather buffers", category: "buffers", bytes: 5e9, phase: "peak" },
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
