import { describe, expect, it } from "vitest";

import { breakdownSegments, expertParallelNote, linkLabel, linkRows, mfuNote, partHelp, pipelineLine, stepBandText, stepHeadline, stepPhasesNote, stepVerdict } from "./step";
import { sampleReport, stepReport } from "./testdata/report";

describe("breakdownSegments", () => {
  it("lists the non-zero parts in the engine's order, and they add up to the step time", () => {
    const segs = breakdownSegments(stepReport());
    expect(segs.map((s) => s.key)).toEqual(["compute", "exposed_comm", "cpu_optimizer", "stall"]);
    expect(segs.map((s) => s.label)).toEqual(["Compute", "Exposed communication", "CPU optimizer", "Prefetch stall"]);
    // 6 + 3 + 0.5 + 0.5 = 10 s
    expect(segs.reduce((sum, s) => sum + s.seconds, 0)).toBe(10);
    expect(segs.map((s) => s.fraction)).toEqual([0.6, 0.3, 0.05, 0.05]);
  });

  it("is empty when the step is not available", () => {
    const r = stepReport();
    r.step = { available: false, reason: "does not fit" };
    expect(breakdownSegments(r)).toEqual([]);
    expect(stepHeadline(r)).toMatchObject({ available: false, reason: "does not fit" });
    expect(stepHeadline(sampleReport())).toMatchObject({ available: false, reason: "The report has no simulated step." });
  });
});

describe("stepHeadline", () => {
  it("reads step time, tokens/s, MFU and micro-batches", () => {
    expect(stepHeadline(stepReport())).toEqual({
      available: true, reason: "", timeS: 10, tokensPerS: 13107.2, samplesPerS: 3.2, mfu: 0.42,
      mfuPrecision: null, mfu16bitPeak: null, microBatches: 2, microBatchS: 5, optimizerPhaseS: null,
    });
  });

  it("says which peak MFU is over, and with FP8 the 16-bit-peak figure", () => {
    const r = stepReport();
    // an FP8 run on H100: model FLOPs at 40 % of 1979 TFLOP/s are 80 % of the 16-bit 989
    r.step = { ...r.step!, mfu_peak: { precision: "fp8", flops_per_s: 1979e12, mfu_16bit_peak: 0.8 } };
    r.mfu = 0.4;
    const head = stepHeadline(r);
    expect(head).toMatchObject({ mfu: 0.4, mfuPrecision: "fp8", mfu16bitPeak: 0.8 });
    expect(mfuNote(head)).toBe("model FLOPs / FP8 peak FLOP/s · 80.0% of the 16-bit peak");
    const bf = stepReport();
    bf.step = { ...bf.step!, mfu_peak: { precision: "16-bit", flops_per_s: 989e12 } };
    expect(mfuNote(stepHeadline(bf))).toBe("model FLOPs / 16-bit peak FLOP/s");
  });
});

describe("stepPhasesNote", () => {
  const head = (timeS: number, microBatches: number, microBatchS: number, optimizerPhaseS: number | null) =>
    ({ ...stepHeadline(stepReport()), timeS, microBatches, microBatchS, optimizerPhaseS });

  it("names the optimizer phase first when it is most of the step", () => {
    // the ZeRO-Infinity example: 44.4 s = 2 x 6.81 s of forward/backward + 30.8 s after them
    expect(stepPhasesNote(head(44.41, 2, 6.81, 30.79))).toBe("optimizer step ≈ 30.79 s (69%), after 2 micro-batches of ≈ 6.81 s");
  });

  it("names the micro-batches first otherwise, and the optimizer step after", () => {
    expect(stepPhasesNote(head(8.98, 2, 4.47, 0.04))).toBe("2 micro-batches of ≈ 4.47 s; optimizer step ≈ 40.0 ms");
    expect(stepPhasesNote(head(5, 1, 5, null))).toBe("1 micro-batch of ≈ 5.00 s");
  });
});

describe("stepVerdict", () => {
  it("names the bottleneck in words, its share and the link to buy", () => {
    const v = stepVerdict(stepReport())!;
    expect(v.bottleneckLabel).toBe("Exposed communication");
    expect(v.buyMoreOfLabel).toBe("NIC (node↔node)");
    expect(v.headline).toBe("Bottleneck: exposed communication (30% of the step) — more NIC (node↔node) bandwidth shortens the step.");
    expect(v.message).toContain("busiest link is nic");
  });

  it("keeps acronyms in the bottleneck's name", () => {
    const r = stepReport();
    r.verdict = { bottleneck: "exposed_offload", message: "m", buy_more_of: "nvme_read" };
    expect(stepVerdict(r)!.headline).toBe("Bottleneck: exposed offload I/O — more NVMe read bandwidth shortens the step.");
    r.verdict = { bottleneck: "cpu_optimizer", message: "m", buy_more_of: null };
    expect(stepVerdict(r)!.headline).toBe("Bottleneck: CPU optimizer (5% of the step).");
  });

  it("says what bounds the CPU optimizer: cores or DDR", () => {
    const r = stepReport();
    r.verdict = { bottleneck: "cpu_optimizer", message: "m", buy_more_of: "cpu_adam", cpu_optimizer_bound: "cpu_adam" };
    expect(stepVerdict(r)!.headline).toBe("Bottleneck: CPU optimizer (5% of the step) — more CPU cores per GPU shorten the step.");
    r.step!.cpu_optimizer = { bound: "cpu_adam", message: "CPU-Adam-bound: 14 cores per GPU update 1135 M parameters/s" };
    expect(partHelp(r, "cpu_optimizer")).toBe(
      "the optimizer step on the CPU that the GPU waits for. CPU-Adam-bound: 14 cores per GPU update 1135 M parameters/s");
    expect(partHelp(r, "compute")).toBe("forward, backward (and recomputation) kernels on the GPU");
  });

  it("says what of the exposed communication is the context-parallel K/V exchange", () => {
    const r = stepReport();
    expect(partHelp(r, "exposed_comm")).toBe(
      "collectives (all-gather, reduce-scatter, all-reduce) not hidden behind compute");
    r.step!.context_parallel = { degree: 16, comm: "all_gather", link: "nic", kv_chunk_bytes: 4194304,
      exposed_s: 0.048, hidden_s: 0, bytes: 1.5e9, layers: 8, exposed_per_step_s: 0.768, source: "TE" };
    expect(partHelp(r, "exposed_comm")).toBe(
      "collectives (all-gather, reduce-scatter, all-reduce) not hidden behind compute. Context parallel 16 " +
      "(all-gather over NIC (node↔node)): 768.0 ms of it exposed per step, 0 s per micro-batch hidden behind attention");
  });

  it("is null without a verdict", () => {
    expect(stepVerdict(sampleReport())).toBeNull();
  });
});

describe("links", () => {
  it("names links and paths of links in words", () => {
    expect(linkLabel("nic")).toBe("NIC (node↔node)");
    expect(linkLabel("nvme_read > pcie_h2d")).toBe("NVMe read ⇒ PCIe host→GPU");
    expect(linkLabel("some_new_link")).toBe("some new link");
  });

  it("gives a row per link, the verdict's link marked", () => {
    const rows = linkRows(stepReport());
    expect(rows.map((r) => r.name)).toEqual(["pcie_h2d", "nvlink", "nic"]);
    expect(rows[2]).toEqual({
      name: "nic", label: "NIC (node↔node)", bytesPerS: 40e9, bytes: 3.2e11, busyS: 8, utilization: 0.8,
      bandwidthFraction: 0.8, bottleneck: true,
    });
    expect(rows.filter((r) => r.bottleneck)).toHaveLength(1);
    // a report from before engine 0.14 has no bandwidth_fraction: shown as a dash
    expect(rows[0].bandwidthFraction).toBeNull();
  });
});

describe("stepBandText", () => {
  const band = (error_rel: [number, number], extra = {}) => {
    const r = stepReport();
    r.step = {
      ...r.step!, time_band_s: [10 * (1 + error_rel[0]), 10 * (1 + error_rel[1])],
      band: { kind: "tensor_pipeline", label: "tensor + pipeline", on: "A100", error_rel, cases: 20, source: "Narayanan et al. SC'21, Table 1 (10)" },
      validated: true, outside_validation: [], ...extra,
    };
    return r;
  };

  it("gives the range, the spread and the kind it was validated on", () => {
    // 10 s with -12 % .. +24 %: 8.80 s .. 12.40 s
    const t = stepBandText(band([-0.12, 0.24]))!;
    expect(t.text).toBe("measured runs of this kind: 8.80 s–12.40 s (−12 % to +24 %), tensor + pipeline on A100");
    expect(t.bias).toBeNull();
    expect(t.explain).toContain("20 validated tensor + pipeline on A100 cases");
    expect(t.explain).toContain("Narayanan et al. SC'21, Table 1");
    expect(t.outside).toBeNull();
  });

  it("says the prediction is low when every measured run took longer (the band lies above it)", () => {
    // 10 s with +41 % .. +55 % (ZeRO-3 on H100: every torchtitan FSDP step was slower than
    // predicted): 14.10 s .. 15.50 s, which does not hold 10 s, so it may not read as 10 s's band
    const t = stepBandText(band([0.41, 0.55]))!;
    expect(t.bias).toBe("higher");
    expect(t.text).toBe("tierlab's figure; measured runs of this kind took 41 % to 55 % longer: 14.10 s–15.50 s, tensor + pipeline on A100");
    expect(t.explain).toContain("was longer than what tierlab predicted for it, by 41 % to 55 %");
    expect(t.explain).toContain("tierlab's step time is low for this kind");
  });

  it("says the prediction is high when every measured run took less", () => {
    // 10 s with -30 % .. -10 %: 7.00 s .. 9.00 s
    const t = stepBandText(band([-0.3, -0.1]))!;
    expect(t.bias).toBe("lower");
    expect(t.text).toBe("tierlab's figure; measured runs of this kind took 10 % to 30 % less: 7.00 s–9.00 s, tensor + pipeline on A100");
    expect(t.explain).toContain("was shorter than what tierlab predicted for it, by 10 % to 30 %");
  });

  it("writes a symmetric band as ±", () => {
    expect(stepBandText(band([-0.11, 0.11]))!.spread).toBe("±11 %");
  });

  it("says when the scenario lies outside what was validated", () => {
    const t = stepBandText(band([-0.12, 0.24], { validated: false, outside_validation: ["GPU H100 (validated: A100)", "strategy zero1 (validated: ddp)"] }))!;
    expect(t.outside).toBe("Outside what was validated: GPU H100 (validated: A100); strategy zero1 (validated: ddp).");
  });

  it("is null for a report without a band", () => {
    expect(stepBandText(stepReport())).toBeNull();
  });
});

describe("expert parallelism", () => {
  const ep = {
    expert_parallel: 16, expert_tensor_parallel: 1, expert_data_parallel: 1, experts_per_rank: 1,
    capacity_factor: null, dropless: true, pad_to_capacity: false, routing_imbalance: 1.5, token_factor: 1.5,
    a2a_overlap: false, imbalance_compute_s: 0.012, source: "Megatron-Core", alltoall_s: 0.05,
    alltoall_exposed_s: 0.05, alltoalls_per_layer: 4, ep_nodes: 2, link: "nic",
  };

  it("says what the all-to-alls and the busiest rank add to the step's parts", () => {
    const r = stepReport();
    r.step!.expert_parallel = ep;
    expect(partHelp(r, "exposed_comm")).toBe(
      "collectives (all-gather, reduce-scatter, all-reduce) not hidden behind compute. Expert parallel 16 " +
      "(1 expert per GPU): 4 all-to-alls per MoE layer across 2 nodes, 50.0 ms per micro-batch");
    expect(expertParallelNote(r, "compute")).toBe(
      "the busiest expert-parallel GPU takes ×1.5 the mean tokens (+12.0 ms of expert GEMMs per micro-batch)");
    r.step!.expert_parallel = { ...ep, a2a_overlap: true, alltoall_exposed_s: 0, token_factor: 1 };
    expect(expertParallelNote(r, "exposed_comm")).toContain(", 0 s of it exposed");
    expect(expertParallelNote(r, "compute")).toBe("");
  });

  it("is empty without expert parallelism", () => {
    expect(expertParallelNote(stepReport(), "exposed_comm")).toBe("");
  });
});

describe("pipelineLine", () => {
  it("says the split, the schedule, the pacing stage and the bubble", () => {
    const r = stepReport();
    expect(pipelineLine(r)).toBeNull();                       // no pipeline
    r.step!.pipeline = { schedule: "1f1b", stage_layers: [7, ...Array(14).fill(8), 7], slowest_stage: 1,
      bubble_micro_batches: 14.5 };
    expect(pipelineLine(r)).toBe("16 pipeline stages of 7, 8 ×14, 7 layers, 1F1B: stage 1 paces it; " +
      "the bubble is 14.50 of its micro-batches");
  });
});
