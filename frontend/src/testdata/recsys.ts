// A hand-made report of a recommendation model (the engine's `embedding` and `ps`
// sections) for unit tests. Round numbers, so every expectation can be checked by hand:
// 2 nodes x 8 GPUs; 1,200 GB of rows stored as HBM 400 GB (16 GPUs), DDR 600 GB and
// NVMe 200 GB (2 nodes each); lookups 90% / 8% / 2%; 10 ms of lookups against 6 ms of
// dense compute (6 ms hidden, 4 ms exposed); all-to-all 4x faster than the PS.
import type { RecsysReport } from "../charts/recsys_series";

export function recsysReport(): RecsysReport {
  return {
    schema: 1,
    engine_version: "0.1.0",
    fits: true,
    violations: [],
    model: {
      name: "recommendation model (dlrm-mlperf-v2)",
      num_params: 150_016_000_000,
      embedding_params: 150_000_000_000,
      dense_params: 16_000_000,
    },
    parallelism: { num_gpus: 16, data_parallel: 16, tensor_parallel: 1, pipeline_parallel: 1, global_batch_size: 65536 },
    memory: {
      per_gpu: { hbm: { total_bytes: 30e9, capacity_bytes: 80e9, present: true, parts: [] } },
      per_node: {
        ddr: { total_bytes: 300e9, capacity_bytes: 2000e9, present: true, parts: [] },
        nvme: { total_bytes: 100e9, capacity_bytes: 30000e9, present: true, parts: [] },
      },
    },
    step: {
      available: true,
      time_s: 0.02,
      breakdown_s: { compute: 0.006, exposed_comm: 0.01, exposed_offload: 0.004 },
    },
    throughput: { samples_per_s: 3_276_800 },
    timeline: {} as RecsysReport["timeline"],
    checkpoint: {} as RecsysReport["checkpoint"],
    offload_bandwidth: {} as RecsysReport["offload_bandwidth"],
    embedding: {
      tiers: [
        {
          tier: "hbm", devices: 16, rows: 100_000_000, bytes: 400e9, capacity_bytes: 800e9,
          over_capacity_bytes: 0, hit_rate: 0.9, lookup_s: 0.002, bound: "bandwidth",
          price_usd_per_gb: 300, cost_usd: 120_000,
        },
        {
          tier: "ddr", devices: 2, rows: 150_000_000, bytes: 600e9, capacity_bytes: 4000e9,
          over_capacity_bytes: 0, hit_rate: 0.08, lookup_s: 0.004, bound: "bandwidth",
          price_usd_per_gb: 5, cost_usd: 3000,
        },
        {
          tier: "nvme", devices: 2, rows: 50_000_000, bytes: 200e9, capacity_bytes: 60000e9,
          over_capacity_bytes: 0, hit_rate: 0.02, lookup_s: 0.01, bound: "iops",
          price_usd_per_gb: 0.1, cost_usd: 20,
        },
      ],
      total_rows: 300_000_000,
      total_bytes: 1200e9,
      value_bytes: 600e9,
      embedding_optimizer: "adagrad",
      fits: true,
      lookups_per_step: 14_000_000,
      lookup_s_per_step: 0.01,
      dense_step_s: 0.006,
      hidden_s: 0.006,
      exposed_s: 0.004,
      cost_usd: 123_020,
      notes: ["Slowest tier: NVME (2.0% of lookups, 10 ms per step, iops-bound)."],
    },
    ps: {
      available: true,
      designs: [
        {
          design: "parameter_server",
          step_time_s: 0.08,
          bytes_on_wire: 8e9,
          network_bytes: 8e9,
          traffic_bytes: { pull: 3e9, push: 3e9, replication: 0, dense_allreduce: 2e9 },
          links: [
            { name: "nic_out", bytes: 0.5e9, busy_s: 0.03, demand_s: 0.01 },
            { name: "server_in", bytes: 1e9, busy_s: 0.05, demand_s: 0.05 },
          ],
          servers: 2,
          replication: 1,
        },
        {
          design: "all_to_all",
          step_time_s: 0.02,
          bytes_on_wire: 4e9,
          network_bytes: 3e9,
          traffic_bytes: { forward_all_to_all: 1e9, backward_all_to_all: 1e9, dense_allreduce: 2e9 },
          links: [
            { name: "nvlink", bytes: 0.1e9, busy_s: 0.001, demand_s: 0.001 },
            { name: "nic_out", bytes: 0.4e9, busy_s: 0.01, demand_s: 0.01 },
          ],
        },
      ],
      faster: "all_to_all",
      speedup: 4,
      notes: ["Embeddings: all_to_all is 4.00x faster than parameter_server."],
    },
  };
}
