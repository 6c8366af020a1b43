import { describe, expect, it } from "vitest";

import { CROSS_CHECK_NOTES, crossCheckRows, estimateNotesSummary, estimateStepSummary, estimateSummary, expertsLine, fp8Line, humanizeKey, partsRows, PHASE_LABELS, stageRows, tierSummaryRows, trainableLine, verdict } from "./report";
import { formatCount, formatSeconds } from "./units";
import { fittingReport, sampleReport } from "./testdata/report";
import type { Report } from "./types";

describe("partsRows", () => {
  it("lists every part of every tier, HBM first", () => {
    const rows = partsRows(sampleReport());
    expect(rows).toHaveLength(7);
    expect(rows[0]).toEqual({
      tier: "hbm", tierLabel: "GPU HBM", where: "HBM per GPU", scope: "per_gpu", scopeLabel: "per GPU",
      name: "bf16 parameters (shard)", category: "params", categoryLabel: "Parameters",
      phase: "persistent", phaseLabel: "whole step", bytes: 8e9, note: "sharded over 16 ranks",
    });
    expect(rows[4]).toMatchObject({ phase: "fwd_bwd", phaseLabel: "forward/backward" });   // words, not ids
    for (const phase of ["loss", "backward", "step", "checkpoint", "load"]) {
      expect(PHASE_LABELS[phase]).toBeTruthy();                       // every moment the engine names
    }
    expect(rows[6]).toMatchObject({
      tier: "ddr", tierLabel: "CPU DDR", where: "DDR per node", scopeLabel: "per node", name: "pinned staging buffers",
      categoryLabel: "Buffers", note: "", bytes: 2e9,
    });
    expect(rows.reduce((s, r) => s + (r.tier === "hbm" ? r.bytes : 0), 0)).toBe(9.1e10);
  });
});

describe("tierSummaryRows", () => {
  it("gives used, capacity and free per tier, negative when over", () => {
    const rows = tierSummaryRows(sampleReport());
    expect(rows.map((r) => r.tier)).toEqual(["hbm", "ddr", "nvme", "cxl"]);
    expect(rows[0]).toMatchObject({ totalBytes: 9.1e10, capacityBytes: 8.5e10, freeBytes: -6e9, fits: false });
    expect(rows[1].fits).toBe(true);
    expect(rows[3]).toMatchObject({ present: false, capacityBytes: 0, fits: true });
  });
});

describe("verdict", () => {
  it("names each violation when the run does not fit", () => {
    expect(verdict(sampleReport())).toEqual({
      fits: false,
      state: "does_not_fit",
      headline: "Does not fit: 1 tier over capacity",
      messages: ["HBM per GPU needs 91.0 GB but has 85.0 GB (over by 6.0 GB)"],
    });
  });
  it("says fits when it fits", () => {
    expect(verdict(fittingReport())).toEqual({ fits: true, state: "fits", headline: "Fits: every tier has room", messages: [] });
  });
  it("says tight, with the band and the engine's reason, inside the error band", () => {
    const r = fittingReport();
    r.fit_state = "tight";
    r.memory.band = 0.08;
    r.memory.tight = [{ tier: "hbm", scope: "per_gpu", peak_phase: "backward", largest_part: "activations",
                        message: "Tight: HBM per GPU needs 80 GB of 85 GB" }];
    expect(verdict(r)).toEqual({
      fits: true,
      state: "tight",
      headline: "Tight: within the engine's ±8 % memory error — it may not fit",
      messages: ["Tight: HBM per GPU needs 80 GB of 85 GB"],
    });
    expect(estimateSummary(r)).toMatch(/^Tight — HBM per GPU/);
  });
});

describe("estimateStepSummary", () => {
  it("gives step time, throughput, MFU and the checkpoint figures", () => {
    const r = {
      ...fittingReport(), step: { available: true, time_s: 6.19 }, throughput: { tokens_per_s: 5300.4 }, mfu: 0.41,
      checkpoint: { size_bytes: 1e12, stall_s: 12, interval_s: 1800, goodput: 0.9712 },
    };
    expect(estimateStepSummary(r)).toBe(
      "Step 6.19 s · 5,300 tokens/s · MFU 41.0% · checkpoint every 30 min (12.00 s stall), goodput 97.1%");
  });

  it("names the FP8 peak an FP8 run's MFU is over, with the 16-bit-peak figure", () => {
    const r = {
      ...fittingReport(), throughput: { tokens_per_s: 5300.4 }, mfu: 0.41,
      step: { available: true, time_s: 6.19, mfu_peak: { precision: "fp8", flops_per_s: 1979e12, mfu_16bit_peak: 0.82 } },
    };
    expect(estimateStepSummary(r)).toBe("Step 6.19 s · 5,300 tokens/s · MFU 41.0% of the FP8 peak (82.0% of the 16-bit peak)");
  });
  it("gives the step's error band and what the scenario lies outside of", () => {
    const step = {
      available: true, time_s: 12.3, time_band_s: [10.8, 15.3] as [number, number], validated: false,
      band: { kind: "tensor_pipeline", label: "tensor + pipeline", on: "A100", error_rel: [-0.12, 0.24] as [number, number], cases: 20, source: "s" },
      outside_validation: ["GPU H100 (validated: A100)"],
    };
    expect(estimateStepSummary({ ...fittingReport(), step })).toBe(
      "Step 12.30 s (measured runs of this kind: 10.80 s–15.30 s (−12 % to +24 %), tensor + pipeline on A100) · " +
      "outside what was validated: GPU H100 (validated: A100)");
  });
  it("says a scenario that does not fit cannot start, before its step time", () => {
    const r = { ...fittingReport(), fits: false, step: { available: true, time_s: 4.54 } };
    expect(estimateStepSummary(r)).toBe("If it fit (it does not, so it cannot start): step 4.54 s");
  });
  it("gives the engine's reason without a step, and nothing for a memory-only report", () => {
    expect(estimateStepSummary({ ...fittingReport(), step: { available: false, reason: "does not fit" } }))
      .toBe("Step time: does not fit");
    expect(estimateStepSummary({ ...fittingReport(), step: undefined })).toBeNull();
  });
});

describe("estimateSummary", () => {
  it("gives the overflow of GPU memory in GiB", () => {
    expect(estimateSummary(sampleReport())).toBe("Overflows HBM per GPU by 5.6 GiB");
  });
  it("gives HBM use and room when it fits, and every node tier that holds something", () => {
    // memory in binary units, HBM and DDR alike (it read "DDR per node 2.0 GB of 2.2 TB" beside
    // the GiB of HBM): 62.1e9 B = 57.8 GiB of 85.0e9 B = 79.2 GiB, 21.3 GiB free; DDR holds
    // 2e9 B = 1.9 GiB of pinned buffers of 2^41 B = 2.0 TiB; NVMe and CXL nothing
    expect(estimateSummary(fittingReport())).toBe(
      "Fits — HBM per GPU 57.8 GiB of 79.2 GiB (21.3 GiB free); DDR per node 1.9 GiB of 2.0 TiB");
  });
  it("gives every memory tier in binary units, NVMe in decimal", () => {
    const r = fittingReport();
    const ddr = r.memory.per_node!.ddr!;
    Object.assign(ddr, { total_bytes: 136.1e9, capacity_bytes: 2.2e12 });
    const line = estimateSummary(r);
    expect(line).toContain("; DDR per node 126.8 GiB of 2.0 TiB");
    expect(line).not.toMatch(/\d GB|\d TB/);
  });
  it("leaves out node tiers that hold nothing", () => {
    const r = fittingReport();
    const nodeTiers = r.memory.per_node ?? {};
    const empty = { ...r, memory: { ...r.memory, per_node: { ...nodeTiers, ddr: { ...nodeTiers.ddr!, total_bytes: 0 } } } };
    expect(estimateSummary(empty)).toBe("Fits — HBM per GPU 57.8 GiB of 79.2 GiB (21.3 GiB free)");
  });
});

describe("cross checks", () => {
  it("names keys in words", () => {
    expect(humanizeKey("zero_paper_model_states_per_gpu_bytes")).toBe("ZeRO paper model states per GPU");
    expect(humanizeKey("deepspeed_estimator")).toBe("DeepSpeed estimator");
    expect(humanizeKey("largest_layer_memory_bytes")).toBe("Largest layer memory");
  });
  it("shows other estimators' bytes in GB and GiB with their caveat", () => {
    const r = sampleReport();
    r.cross_checks = {
      zero_paper_model_states_per_gpu_bytes: 6.4e10,
      deepspeed_estimator: { gpu_bytes: 2 ** 36, cpu_bytes: 1e10, view: "model states only" },
    };
    // 6.4e10 / 2^30 = 59.6 GiB; 2^36 = 68.7e9 bytes = 64 GiB; 1e10 / 2^30 = 9.3 GiB
    expect(crossCheckRows(r)).toEqual([
      { name: "ZeRO paper model states per GPU", value: "64.0 GB (59.6 GiB)", note: CROSS_CHECK_NOTES.zero_paper_model_states_per_gpu_bytes },
      { name: "DeepSpeed estimator: GPU", value: "68.7 GB (64.0 GiB)", note: "model states only" },
      { name: "DeepSpeed estimator: CPU", value: "10.0 GB (9.3 GiB)", note: "model states only" },
    ]);
    expect(crossCheckRows(sampleReport())).toEqual([]);
    expect(CROSS_CHECK_NOTES.zero_paper_model_states_per_gpu_bytes).toContain("2 + 2 + K bytes per parameter");
  });
  it("says the ZeRO paper's figure is full fine-tuning's under LoRA", () => {
    const r = sampleReport();
    r.model = { ...(r.model ?? {}), num_params: 8e9, trainable_params: 2.1e7 };
    r.cross_checks = { zero_paper_model_states_per_gpu_bytes: 1.285e11 };
    const [row] = crossCheckRows(r);
    expect(row.note).toContain("counted as full fine-tuning: under LoRA only the adapters");
  });
});

describe("estimate notes", () => {
  it("fold to one line naming how many there are", () => {
    expect(estimateNotesSummary(["2 gradient-accumulation steps per optimizer step."]))
      .toBe("1 note: 2 gradient-accumulation steps per optimizer step.");
    const long = "x".repeat(200);
    const s = estimateNotesSummary([long, "b"]);
    expect(s.startsWith("2 notes: x")).toBe(true);
    expect(s.endsWith("…")).toBe(true);
    expect(s.length).toBeLessThan(110);
  });
});

describe("trainableLine (LoRA)", () => {
  it("gives the trained share under LoRA and nothing without it", () => {
    // Llama-2-7B r = 8 on q, v: 4,194,304 of 6,738,415,616 (PEFT: 0.0622 %)
    expect(trainableLine({ num_params: 6738415616, trainable_params: 4194304 })).toBe(
      `LoRA: ${formatCount(4194304)} trained (0.062 %), the rest frozen`);
    expect(trainableLine({ num_params: 6738415616 })).toBeNull();
  });
  it("names whose LoRA the engine counted", () => {
    expect(trainableLine({ num_params: 8e9, trainable_params: 4194304, lora_implementation: "automodel" }))
      .toMatch(/^LoRA \(NeMo AutoModel's LinearLoRA\): /);
    expect(trainableLine({ num_params: 8e9, trainable_params: 4194304, lora_implementation: "peft" }))
      .toMatch(/^LoRA \(Hugging Face PEFT\): /);
  });
});

describe("fp8Line (training.fp8, issue #15)", () => {
  const compute = {
    model: "work", layer_fwd_s: 1e-3, layer_bwd_s: 2e-3, head_s: 1e-3, fp8_cast_fwd_s: 1.5e-4, fp8_cast_bwd_s: 2.5e-4,
    fp8: { recipe: "delayed", format: "hybrid", implementation: "transformer_engine" as const, gemm_flops: 1402.6e12,
      peak_flops_fp8: 1979e12, amax_reduction_s: 0, source: "simulation/fp8.py" },
  };
  it("says the recipe, the library, the FP8 GEMM rate and the casts", () => {
    expect(fp8Line({ available: true, compute })).toBe(
      `FP8 delayed (hybrid, Transformer Engine): GEMMs at 1402.6 TFLOP/s, casts ${formatSeconds(4e-4)} a layer`);
    expect(fp8Line({ available: true, compute: { ...compute, fp8: undefined } })).toBeNull();
    expect(estimateStepSummary({ step: { available: true, time_s: 2, compute } } as unknown as Report))
      .toContain("FP8 delayed");
  });
});

describe("expertsLine (expert parallelism)", () => {
  it("says how the experts are laid out, and nothing without EP", () => {
    expect(expertsLine({ num_gpus: 16, expert_parallel: 8, expert_tensor_parallel: 1, expert_data_parallel: 2 }, 8))
      .toBe("EP 8: 1 of 8 experts per GPU, expert tensor parallel 1, 2 expert-data-parallel replicas");
    expect(expertsLine({ expert_parallel: 4, expert_data_parallel: 1 })).toBe(
      "EP 4: experts split 4 ways, expert tensor parallel 1, 1 expert-data-parallel replica");
    expect(expertsLine({ num_gpus: 8, tensor_parallel: 1 })).toBeNull();
  });
});

describe("stageRows", () => {
  it("lists every pipeline stage, groups and marks the verdict's", () => {
    const report = sampleReport();
    report.memory.stage = "middle";
    report.memory.stage_index = 1;
    report.memory.per_stage = [
      { stage: "first", stages: "0", num_stages: 1, layers: 7, micro_batches_in_flight: 16, hbm_total_bytes: 8.7e10,
        hbm_model_state_bytes: 2.0e10, hbm_activation_bytes: 5.9e10, hbm_peak_phase: "loss" },
      { stage: "middle", stages: "1-14", num_stages: 14, layers: 8, micro_batches_in_flight: 15, hbm_total_bytes: 9.3e10,
        hbm_peak_phase: "loss" },
      { stage: "last", stages: "15", num_stages: 1, layers: 7, micro_batches_in_flight: 1, hbm_total_bytes: 2.8e10 },
    ];
    const rows = stageRows(report);
    expect(rows.map((r) => [r.stages, r.role, r.worst])).toEqual([
      ["0", "first", false], ["1-14 (14)", "middle", true], ["15", "last", false]]);
    expect(rows[0]).toMatchObject({ layers: 7, inFlight: 16, stateBytes: 2.0e10, phase: PHASE_LABELS.loss });
    expect(rows[1].stateBytes).toBeNull();
    expect(stageRows(sampleReport())).toEqual([]);          // no pipeline: no rows
  });
});
