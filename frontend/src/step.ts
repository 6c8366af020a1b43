// Pure helpers that read the simulated step of an engine report for display: the parts of
// the step time, the links, the verdict. No DOM, no ECharts.

import { BREAKDOWN_KEYS, type BreakdownKey, type ContextParallelExchange, type Report } from "./types";
import { formatPercent, formatSeconds, plural } from "./units";

/** The step-time parts, in the engine's order, as words. */
export const BREAKDOWN_LABELS: Record<BreakdownKey, string> = {
  compute: "Compute",
  exposed_comm: "Exposed communication",
  exposed_offload: "Exposed offload I/O",
  cpu_optimizer: "CPU optimizer",
  stall: "Prefetch stall",
  pipeline_bubble: "Pipeline bubble",
};

/** What each part means, for the table and tooltips. */
export const BREAKDOWN_HELP: Record<BreakdownKey, string> = {
  compute: "forward, backward (and recomputation) kernels on the GPU",
  exposed_comm: "collectives (all-gather, reduce-scatter, all-reduce) not hidden behind compute",
  exposed_offload: "PCIe / NVMe / CXL / DDR transfers not hidden behind compute",
  cpu_optimizer: "the optimizer step on the CPU that the GPU waits for",
  stall: "GPU waiting on a mispredicted prefetch",
  pipeline_bubble: "pipeline-parallel fill and drain",
};

/** Names of the node's links and streams, as the engine writes them. */
export const LINK_LABELS: Record<string, string> = {
  gpu: "GPU stream",
  cpu: "CPU",
  nvlink: "NVLink (GPU↔GPU)",
  nic: "NIC (node↔node)",
  pcie_h2d: "PCIe host→GPU",
  pcie_d2h: "PCIe GPU→host",
  ddr: "CPU DDR",
  cxl: "CXL memory",
  cxl_read: "CXL read",
  cxl_write: "CXL write",
  nvme_read: "NVMe read",
  nvme_write: "NVMe write",
  nvme: "NVMe drives (reads + writes, read-equivalent bytes)",
  cpu_adam: "CPU optimizer cores (CPU-Adam, or torch AdamW under FSDP; update rate as DDR bytes)",
  pcie_switch_up: "PCIe switch uplink (to host)",
  pcie_switch_down: "PCIe switch uplink (from host)",
};

/** A lane or link as words; a path of links "nvme_read > pcie_h2d" -> "NVMe read → PCIe host→GPU". */
export function linkLabel(name: string): string {
  const hops = name.split(">").map((s) => s.trim()).filter(Boolean);
  if (hops.length > 1) return hops.map(linkLabel).join(" ⇒ ");
  return LINK_LABELS[name] ?? name.replace(/_/g, " ");
}

/**
 * What a part of the step is; the CPU optimizer's says what bounds it in the engine's
 * words ("CPU-Adam-bound: 14 cores per GPU ..." or "DDR-bound: ...").
 */
export function partHelp(report: Report, key: string): string {
  const help = BREAKDOWN_HELP[key as BreakdownKey] ?? "";
  const notes = [
    key === "cpu_optimizer" ? report.step?.cpu_optimizer?.message : undefined,
    key === "exposed_comm" || key === "compute" ? expertParallelNote(report, key) : undefined,
    key === "exposed_comm" && report.step?.context_parallel ? contextParallelWords(report.step.context_parallel) : undefined,
  ].filter((n): n is string => Boolean(n));
  return notes.length ? `${help}. ${notes.join(". ")}` : help;
}

/**
 * The context-parallel K/V exchange in words: "Context parallel 2 (p2p ring over NVLink (GPU↔GPU)):
 * 0 s of it exposed per step, 18.6 ms per micro-batch hidden behind attention".
 */
export function contextParallelWords(cp: ContextParallelExchange): string {
  const how = cp.comm === "all_gather" ? "all-gather" : "p2p ring";
  return `Context parallel ${cp.degree} (${how} over ${linkLabel(cp.link)}): ` +
    `${formatSeconds(cp.exposed_per_step_s)} of it exposed per step, ` +
    `${formatSeconds(cp.hidden_s)} per micro-batch hidden behind attention`;
}

/**
 * What expert parallelism puts in a step part (engine: step.expert_parallel), per micro-batch:
 * in exposed communication the MoE layers' all-to-alls, in compute the busiest rank's extra
 * expert GEMMs. "" without expert parallelism or when the part has none.
 */
export function expertParallelNote(report: Report, key: string): string {
  const ep = report.step?.expert_parallel;
  if (!ep) return "";
  if (key === "exposed_comm" && typeof ep.alltoall_s === "number") {
    const where = ep.link === "nic" ? `across ${plural(ep.ep_nodes ?? 2, "node")}` : "inside a node";
    const hidden = ep.a2a_overlap ? `, ${formatSeconds(ep.alltoall_exposed_s ?? 0)} of it exposed` : "";
    return `Expert parallel ${ep.expert_parallel} (${plural(ep.experts_per_rank, "expert")} per GPU): ` +
      `${ep.alltoalls_per_layer} all-to-alls per MoE layer ${where}, ` +
      `${formatSeconds(ep.alltoall_s)} per micro-batch${hidden}`;
  }
  if (key === "compute" && ep.token_factor !== 1) {
    return `the busiest expert-parallel GPU takes ×${ep.token_factor} the mean tokens ` +
      `(+${formatSeconds(ep.imbalance_compute_s)} of expert GEMMs per micro-batch)`;
  }
  return "";
}

/** "more X bandwidth shortens the step", or for the optimizer's cores, more cores. */
function buyWords(buy: string): string {
  return buy === "cpu_adam" ? "more CPU cores per GPU shorten the step" : `more ${linkLabel(buy)} bandwidth shortens the step`;
}

export function breakdownLabel(key: string): string {
  return BREAKDOWN_LABELS[key as BreakdownKey] ?? key.replace(/_/g, " ");
}

export interface StepHeadline {
  available: boolean;
  reason: string;
  timeS: number;
  tokensPerS: number | null;
  samplesPerS: number | null;
  mfu: number | null;
  /** The precision of the peak MFU is over ("fp8", "16-bit", "fp32"), null when not given. */
  mfuPrecision: string | null;
  /** With FP8: the same model FLOPs over the 16-bit peak, to set beside 16-bit runs. */
  mfu16bitPeak: number | null;
  microBatches: number | null;
  microBatchS: number | null;
  optimizerPhaseS: number | null;
}

/** The peak MFU is over, in words ("FP8 peak"), "" when the report does not say. */
export function mfuPeakWords(head: StepHeadline): string {
  if (!head.mfuPrecision) return "";
  return `${head.mfuPrecision === "fp8" ? "FP8" : head.mfuPrecision === "fp32" ? "FP32" : "16-bit"} peak`;
}

/** The MFU stat's note: what it divides by, and with FP8 the 16-bit-peak figure. */
export function mfuNote(head: StepHeadline): string {
  const peak = mfuPeakWords(head);
  let note = `model FLOPs / ${peak ? `${peak} FLOP/s` : "peak FLOP/s"}`;
  if (head.mfu16bitPeak !== null) note += ` · ${formatPercent(head.mfu16bitPeak)} of the 16-bit peak`;
  return note;
}

/** The step's headline numbers, or available=false with the engine's reason. */
export function stepHeadline(report: Report): StepHeadline {
  const step = report.step;
  const available = !!step && step.available !== false && typeof step.time_s === "number";
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  return {
    available,
    reason: available ? "" : step?.reason ?? "The report has no simulated step.",
    timeS: available ? (step!.time_s as number) : 0,
    tokensPerS: num(report.throughput?.tokens_per_s),
    samplesPerS: num(report.throughput?.samples_per_s),
    mfu: num(report.mfu),
    mfuPrecision: step?.mfu_peak?.precision ?? null,
    mfu16bitPeak: num(step?.mfu_peak?.mfu_16bit_peak),
    microBatches: num(step?.micro_batches),
    microBatchS: num(step?.micro_batch_s),
    optimizerPhaseS: num(step?.optimizer_phase_s),
  };
}

/**
 * The step's phases in one line, the longest first, so a step that is mostly its optimizer
 * says so: "optimizer step ≈ 30.8 s (69%), after 2 micro-batches of ≈ 6.81 s" or
 * "2 micro-batches of ≈ 4.47 s; optimizer step ≈ 40.0 ms". "" without micro-batch figures.
 */
export function stepPhasesNote(head: StepHeadline): string {
  if (!head.microBatches) return "";
  const mb = `${plural(head.microBatches, "micro-batch", "micro-batches")}` +
    (head.microBatchS ? ` of ≈ ${formatSeconds(head.microBatchS)}` : "");
  const opt = head.optimizerPhaseS;
  if (opt === null || !(opt > 0) || !(head.timeS > 0)) return mb;
  const optText = `optimizer step ≈ ${formatSeconds(opt)}`;
  return opt > head.timeS - opt
    ? `${optText} (${formatPercent(opt / head.timeS, 0)}), after ${mb}`
    : `${mb}; ${optText}`;
}

export interface BreakdownSegment {
  key: string;
  label: string;
  seconds: number;
  /** Share of the step time, 0..1. */
  fraction: number;
}

/**
 * The parts of the step time in the engine's order, zero parts left out. They add up to
 * the step time (the engine attributes every second of the step to one part).
 */
export function breakdownSegments(report: Report): BreakdownSegment[] {
  const head = stepHeadline(report);
  if (!head.available) return [];
  const parts = report.step?.breakdown_s ?? {};
  const keys = [...BREAKDOWN_KEYS, ...Object.keys(parts).filter((k) => !(BREAKDOWN_KEYS as readonly string[]).includes(k))];
  const out: BreakdownSegment[] = [];
  for (const key of keys) {
    const seconds = parts[key];
    if (typeof seconds !== "number" || !(seconds > 0)) continue;
    out.push({ key, label: breakdownLabel(key), seconds, fraction: head.timeS > 0 ? seconds / head.timeS : 0 });
  }
  return out;
}

export interface StepVerdictText {
  bottleneck: string;
  bottleneckLabel: string;
  message: string;
  buyMoreOf: string | null;
  buyMoreOfLabel: string | null;
  /** One sentence naming the bottleneck: "Bottleneck: exposed communication (54% of the step)." */
  headline: string;
}

/** The engine's verdict on the step, with its bottleneck and the link to buy named in words. */
export function stepVerdict(report: Report): StepVerdictText | null {
  const v = report.verdict;
  if (!v || (!v.bottleneck && !v.message)) return null;
  const bottleneck = v.bottleneck ?? "";
  const label = bottleneck ? breakdownLabel(bottleneck) : "none";
  const share = breakdownSegments(report).find((s) => s.key === bottleneck)?.fraction;
  const buy = v.buy_more_of ?? null;
  // "Exposed offload I/O" -> "exposed offload I/O"; "CPU optimizer" stays as it is.
  const lower = /^[A-Z][a-z]/.test(label) ? label.charAt(0).toLowerCase() + label.slice(1) : label;
  const pct = share !== undefined ? ` (${Math.round(share * 100)}% of the step)` : "";
  return {
    bottleneck,
    bottleneckLabel: label,
    message: v.message ?? "",
    buyMoreOf: buy,
    buyMoreOfLabel: buy ? linkLabel(buy) : null,
    headline: `Bottleneck: ${lower}${pct}${buy ? ` — ${buyWords(buy)}` : ""}.`,
  };
}

export interface LinkRow {
  name: string;
  label: string;
  bytesPerS: number;
  bytes: number | null;
  busyS: number;
  /** Share of the step any flow was on the link, 0..1. */
  utilization: number;
  /** Share of the link's capacity the step used (bytes over bandwidth x step), 0..1; null from older reports. */
  bandwidthFraction: number | null;
  /** The link the verdict says to buy more of. */
  bottleneck: boolean;
}

/** The links of the node as the step used them (rates and bytes per GPU), engine order. */
export function linkRows(report: Report): LinkRow[] {
  const buy = report.verdict?.buy_more_of;
  return (report.links ?? []).map((l) => ({
    name: l.name,
    label: linkLabel(l.name),
    bytesPerS: l.bytes_per_s,
    bytes: typeof l.bytes === "number" ? l.bytes : null,
    busyS: l.busy_s,
    utilization: l.utilization,
    bandwidthFraction: typeof l.bandwidth_fraction === "number" ? l.bandwidth_fraction : null,
    bottleneck: !!buy && buy === l.name,
  }));
}

export interface StepBandText {
  /** "5.48 s–7.69 s" */
  range: string;
  /** "±11 %" when the band is symmetric within half a point, else "−12 % to +24 %". */
  spread: string;
  /** "tensor + pipeline on A100" */
  kind: string;
  /** "higher" when every measured run of the kind took longer than predicted (the band lies above
   *  the prediction), "lower" when every one took less, null when the band holds the prediction. */
  bias: "higher" | "lower" | null;
  /** "measured runs of this kind: 8.80 s–12.40 s (−12 % to +24 %), tensor + pipeline on A100", or,
   *  for a biased kind, "tierlab's figure; measured runs of this kind took 41 % to 55 % longer:
   *  885.8 ms–976.1 ms, ZeRO-3 / FSDP on H100" — the band is where measurements lay, so when it
   *  does not hold the prediction the words say that the prediction is low (or high). */
  text: string;
  /** What the band is, with its source, for a tooltip or a line under the number. */
  explain: string;
  /** "Outside what was validated: GPU H100 (validated: A100)." or null. */
  outside: string | null;
}

function pct(x: number): string {
  const v = Math.round(x * 100);
  return `${v > 0 ? "+" : v < 0 ? "−" : "±"}${Math.abs(v)} %`;
}

/** The step's error band in words, or null when the report has none (older reports).
 *
 *  The band (simulation/errormodel.py, README "What the bands mean") is where the measured steps
 *  of the kind's validated cases lay relative to tierlab's prediction for them, applied to this
 *  prediction; it is not centred on it. When every case was measured slower (``error_rel`` all
 *  above 0) the band lies wholly above the headline, and the text says so instead of printing a
 *  range beside a number it does not contain. */
export function stepBandText(report: Report): StepBandText | null {
  const step = report.step;
  const band = step?.band;
  const t = step?.time_band_s;
  if (!step || !band || !t || t.length !== 2) return null;
  const [lo, hi] = band.error_rel;
  const spread = Math.abs(lo + hi) < 0.005 ? `±${Math.round(hi * 100)} %` : `${pct(lo)} to ${pct(hi)}`;
  const kind = band.on ? `${band.label} on ${band.on}` : band.label;
  const range = `${formatSeconds(t[0])}–${formatSeconds(t[1])}`;
  const why = step.outside_validation ?? [];
  const bias = lo > 0 ? "higher" : hi < 0 ? "lower" : null;
  const mag = (a: number, b: number) => `${Math.round(a * 100)} % to ${Math.round(b * 100)} %`;
  const text = bias === "higher"
    ? `tierlab's figure; measured runs of this kind took ${mag(lo, hi)} longer: ${range}, ${kind}`
    : bias === "lower"
      ? `tierlab's figure; measured runs of this kind took ${mag(-hi, -lo)} less: ${range}, ${kind}`
      : `measured runs of this kind: ${range} (${spread}), ${kind}`;
  const cases = `${band.cases} validated ${kind} case${band.cases === 1 ? "" : "s"}`;
  const explain = bias
    ? `Every measured step of the ${cases} was ${bias === "higher" ? "longer" : "shorter"} than what ` +
      `tierlab predicted for it, by ${mag(Math.abs(bias === "higher" ? lo : hi), Math.abs(bias === "higher" ? hi : lo))}: ` +
      `tierlab's step time is ${bias === "higher" ? "low" : "high"} for this kind, and the range is where ` +
      `a real run's step is to be expected (${band.source}).`
    : `Every measured step of the ${cases} lay within ${spread} of what tierlab predicted for it (${band.source}).`;
  return {
    range, spread, kind, bias, text, explain,
    outside: step.validated === false && why.length ? `Outside what was validated: ${why.join("; ")}.` : null,
  };
}

const SCHEDULE_NAMES: Record<string, string> = { "1f1b": "1F1B", interleaved: "interleaved 1F1B", dualpipe: "DualPipe" };

/** "16 stages (7, 8 ×14, 7), 1F1B: stage 1 paces it; bubble 15.2 micro-batches", or null. */
export function pipelineLine(report: Report): string | null {
  const pl = report.step?.pipeline;
  if (!pl || !pl.stage_layers.length) return null;
  const runs: string[] = [];
  let i = 0;
  while (i < pl.stage_layers.length) {
    let j = i;
    while (j + 1 < pl.stage_layers.length && pl.stage_layers[j + 1] === pl.stage_layers[i]) j++;
    runs.push(j > i ? `${pl.stage_layers[i]} ×${j - i + 1}` : String(pl.stage_layers[i]));
    i = j + 1;
  }
  const n = pl.stage_layers.length;
  return `${n} pipeline stages of ${runs.join(", ")} layers, ${SCHEDULE_NAMES[pl.schedule] ?? pl.schedule}: ` +
    `stage ${pl.slowest_stage} paces it; the bubble is ${pl.bubble_micro_batches.toFixed(2)} of its micro-batches`;
}
