// Hand-made reports, a comparison and a sweep for the dashboard's unit tests. Round numbers,
// so expectations can be checked by hand.

import type { Report } from "../types";
import type { Sweep } from "./types";

/** A report: HBM 60 of 80 GB, DDR 100 GB of 2,000 GB, a 10 s step, goodput 99%, $40/h. */
export function reportA(): Report {
  return {
    schema: 1,
    fits: true,
    violations: [],
    memory: {
      per_gpu: {
        hbm: {
          params_bytes: 10e9, grads_bytes: 10e9, optimizer_bytes: 20e9, activations_bytes: 15e9, buffers_bytes: 5e9,
          total_bytes: 60e9, capacity_bytes: 80e9, present: true,
        },
      },
      per_node: {
        ddr: {
          params_bytes: 0, grads_bytes: 0, optimizer_bytes: 100e9, activations_bytes: 0, buffers_bytes: 0,
          total_bytes: 100e9, capacity_bytes: 2000e9, present: true,
        },
        nvme: { total_bytes: 0, capacity_bytes: 30e12, present: true },
        cxl: { total_bytes: 0, capacity_bytes: 0, present: false },
      },
    },
    step: { available: true, time_s: 10, breakdown_s: { compute: 6, exposed_comm: 3, exposed_offload: 1, stall: 0 } },
    timeline: {
      makespan_s: 0.2,
      tasks: [
        { name: "forward L0", lane: "gpu", kind: "compute", start_s: 0, end_s: 0.1 },
        { name: "all-gather L1", lane: "nic", kind: "allgather", start_s: 0, end_s: 0.05 },
        { name: "backward L0", lane: "gpu", kind: "compute", start_s: 0.1, end_s: 0.2 },
      ],
    },
    checkpoint: {
      size_bytes: 1e12, stall_s: 30, interval_s: 3600, goodput: 0.99,
      curve: { interval_s: [360, 3600, 36000], goodput: [0.95, 0.99, 0.97] },
    },
    ...({ cost: { usd_per_hour: 40, usd_per_million_tokens: 2.5 } } as object),
  } as Report;
}

/** A second report that does not fit: HBM 90 of 80 GB, a 20 s step, twice the cost per token. */
export function reportB(): Report {
  const r = reportA();
  const hbm = r.memory.per_gpu!.hbm!;
  r.memory.per_gpu!.hbm = { ...hbm, optimizer_bytes: 50e9, total_bytes: 90e9 };
  r.fits = false;
  r.step = { available: true, time_s: 20, breakdown_s: { compute: 6, exposed_comm: 14 } };
  r.timeline = {
    makespan_s: 0.4,
    tasks: [
      { name: "forward L0", lane: "gpu", kind: "compute", start_s: 0, end_s: 0.2 },
      { name: "offload", lane: "pcie_h2d", kind: "offload", start_s: 0.1, end_s: 0.4 },
    ],
  };
  r.checkpoint = { ...r.checkpoint!, interval_s: 360, goodput: 0.95 };
  (r as unknown as { cost: object }).cost = { usd_per_hour: 40, usd_per_million_tokens: 5 };
  return r;
}

/** A 3 × 2 sweep: nodes [1, 2, 4] × strategy [zero2, zero3]; every kind of outcome. */
export function sampleSweep(): Sweep {
  const axes = [
    { path: "cluster.num_nodes", label: "Number of nodes", values: [1, 2, 4], value_labels: [null, null, null] },
    { path: "strategy.kind", label: "Strategy", values: ["zero2", "zero3"], value_labels: ["ZeRO-2", "ZeRO-3"] },
  ];
  const v = (n: number, k: string) => ({ "cluster.num_nodes": n, "strategy.kind": k });
  const ok = (index: number, n: number, k: string, step: number, cost: number) => ({
    index, values: v(n, k), status: "done", valid: true, fits: true, step_time_s: step,
    usd_per_million_tokens: cost, usd_per_hour: 40 * n, hbm_total_bytes: 50e9, tokens_per_s: 1000, mfu: 0.4, goodput: 0.99,
  });
  return {
    id: 7, name: "sweep", base: { id: 1, name: "base" }, axes, status: "running", cancelled: false,
    progress: 5 / 6, done_points: 5, total_points: 6, chunks: 2, error: "",
    pareto: [1, 3],
    points: [
      { index: 0, values: v(1, "zero2"), status: "done", valid: true, fits: false, step_time_s: 5, usd_per_million_tokens: 1,
        violations: ["HBM per GPU over by 10 GB"] },
      ok(1, 1, "zero3", 8, 2),
      ok(2, 2, "zero2", 6, 3.5),
      ok(3, 2, "zero3", 4, 3),
      { index: 4, values: v(4, "zero2"), status: "done", valid: false, fits: false, error: "training.global_batch_size: must divide" },
      { index: 5, values: v(4, "zero3"), status: "pending" },
    ],
  };
}
