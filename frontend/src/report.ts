// Pure helpers that read an engine report for display. No DOM, no ECharts.

import { CATEGORIES, type Category, type Report, type Scope, type Step, type TierKey, type TierUsage } from "./types";
import { stepBandText } from "./step";
import { UNIT_GIB, formatBytes, formatCount, formatDuration, formatIn, formatNumber, formatPercent, formatSeconds, formatTierBytes } from "./units";

export interface TierInfo {
  key: TierKey;
  scope: Scope;
  label: string;
  name: string;
}

/** The tiers a report can hold, in display order. */
export const TIERS: readonly TierInfo[] = [
  { key: "hbm", scope: "per_gpu", label: "HBM per GPU", name: "GPU HBM" },
  { key: "ddr", scope: "per_node", label: "DDR per node", name: "CPU DDR" },
  { key: "nvme", scope: "per_node", label: "NVMe per node", name: "NVMe" },
  { key: "cxl", scope: "per_node", label: "CXL per node", name: "CXL memory" },
  // only a recommendation model's embedding rows use it
  { key: "pmem", scope: "per_node", label: "PMEM per node", name: "Optane PMem" },
];

export const CATEGORY_LABELS: Record<Category, string> = {
  params: "Parameters",
  grads: "Gradients",
  optimizer: "Optimizer states",
  activations: "Activations",
  buffers: "Buffers",
};

export const SCOPE_LABELS: Record<Scope, string> = { per_gpu: "per GPU", per_node: "per node" };

export function tierInfo(key: string, scope?: string): TierInfo | undefined {
  return TIERS.find((t) => t.key === key && (scope === undefined || t.scope === scope));
}

/** A tier's usage from the report, or undefined when the report has no entry for it. */
export function tierUsage(report: Report, tier: TierInfo): TierUsage | undefined {
  const usage = report.memory?.[tier.scope]?.[tier.key];
  return usage && typeof usage.total_bytes === "number" ? usage : undefined;
}

/** Bytes of one category in a tier: the `<category>_bytes` total, else the sum of its parts. */
export function categoryBytes(usage: TierUsage, category: Category): number {
  const key = `${category}_bytes` as keyof TierUsage;
  const total = usage[key];
  if (typeof total === "number") return total;
  return (usage.parts ?? [])
    .filter((p) => p.category === category)
    .reduce((sum, p) => sum + p.bytes, 0);
}

export interface PartRow {
  tier: TierKey;
  tierLabel: string;
  /** Tier and scope: "HBM per GPU". */
  where: string;
  scope: Scope;
  scopeLabel: string;
  name: string;
  category: string;
  categoryLabel: string;
  phase: string;
  /** When the part is allocated, in words: "whole step", "forward/backward", "optimizer step". */
  phaseLabel: string;
  bytes: number;
  note: string;
}

/** The engine's allocation phases in words (a tier peaks in one of its moments: the loss,
 * a layer's backward, the optimizer step, a checkpoint save, or loading the model). */
export const PHASE_LABELS: Record<string, string> = {
  persistent: "whole step",
  fwd_bwd: "forward/backward",
  loss: "loss (end of forward, start of backward)",
  backward: "backward (a layer's)",
  step: "optimizer step",
  checkpoint: "checkpoint save",
  load: "loading the model",
};

/** Every part of every tier, tiers in display order, parts as the engine listed them. */
export function partsRows(report: Report): PartRow[] {
  const rows: PartRow[] = [];
  for (const tier of TIERS) {
    const usage = tierUsage(report, tier);
    for (const part of usage?.parts ?? []) {
      rows.push({
        tier: tier.key,
        tierLabel: tier.name,
        where: tier.label,
        scope: tier.scope,
        scopeLabel: SCOPE_LABELS[tier.scope],
        name: part.name,
        category: part.category,
        categoryLabel: CATEGORY_LABELS[part.category as Category] ?? part.category,
        phase: part.phase ?? "",
        phaseLabel: PHASE_LABELS[part.phase ?? ""] ?? part.phase ?? "",
        bytes: part.bytes,
        note: part.note ?? "",
      });
    }
  }
  return rows;
}

export interface TierSummaryRow {
  tier: TierKey;
  label: string;
  present: boolean;
  totalBytes: number;
  capacityBytes: number;
  /** capacity - total; negative when the tier overflows. */
  freeBytes: number;
  fits: boolean;
}

/** One row per tier in the report (absent tiers included, marked present=false). */
export function tierSummaryRows(report: Report): TierSummaryRow[] {
  const rows: TierSummaryRow[] = [];
  for (const tier of TIERS) {
    const usage = tierUsage(report, tier);
    if (!usage) continue;
    const capacity = usage.present ? usage.capacity_bytes : 0;
    const free = usage.free_bytes ?? capacity - usage.total_bytes;
    rows.push({
      tier: tier.key,
      label: tier.label,
      present: usage.present,
      totalBytes: usage.total_bytes,
      capacityBytes: capacity,
      freeBytes: free,
      fits: usage.total_bytes <= capacity || usage.total_bytes === 0,
    });
  }
  return rows;
}

export interface Verdict {
  fits: boolean;
  /** fits | tight | does_not_fit */
  state: string;
  headline: string;
  messages: string[];
}

export function verdict(report: Report): Verdict {
  const messages = (report.violations ?? []).map((v) => v.message);
  const tight = report.memory?.tight ?? [];
  if (report.fits && report.fit_state === "tight") {
    const band = report.memory?.band;
    return {
      fits: true,
      state: "tight",
      headline: `Tight: within the engine's ${band ? `±${Math.round(band * 100)} % ` : ""}memory error — it may not fit`,
      messages: tight.map((t) => t.message),
    };
  }
  if (report.fits) {
    return { fits: true, state: "fits", headline: "Fits: every tier has room", messages };
  }
  const n = messages.length;
  return {
    fits: false,
    state: "does_not_fit",
    headline: n ? `Does not fit: ${n} tier${n === 1 ? "" : "s"} over capacity` : "Does not fit",
    messages,
  };
}

/** One line for the live estimate: "Fits — HBM per GPU 57.8 GiB of 79.3 GiB (21.5 GiB free)". */
export function estimateSummary(report: Report): string {
  const hbm = TIERS[0];
  const usage = tierUsage(report, hbm);
  if (!report.fits) {
    const violations = report.violations ?? [];
    if (!violations.length) return "Does not fit";
    const parts = violations.map((v) => {
      const info = tierInfo(v.tier, v.scope);
      const label = info ? info.label : `${v.tier} ${v.scope.replace("_", " ")}`;
      return `${label} by ${formatTierBytes(v.over_bytes, v.tier)}`;
    });
    return `Overflows ${parts.join("; ")}`;
  }
  if (!usage) return "Fits";
  const free = usage.capacity_bytes - usage.total_bytes;
  const lead = report.fit_state === "tight" ? "Tight" : "Fits";
  // Offloaded states live in the node's tiers: name each one that holds something.
  const others = TIERS.slice(1).flatMap((tier) => {
    const u = tierUsage(report, tier);
    if (!u || !(u.total_bytes > 0)) return [];
    return [`${tier.label} ${formatTierBytes(u.total_bytes, tier.key)} of ${formatTierBytes(u.capacity_bytes, tier.key)}`];
  });
  const gib = (b: number) => formatIn(b, UNIT_GIB);
  return (
    `${lead} — ${hbm.label} ${gib(usage.total_bytes)} of ${gib(usage.capacity_bytes)} ` +
    (free >= 0 ? `(${gib(free)} free)` : `(over by ${gib(-free)}, within the error band)`) + others.map((o) => `; ${o}`).join("")
  );
}

/**
 * The live estimate's second line, from a report with the simulated step: "Step 6.19 s
 * (5.45 s–7.68 s, −12 % to +24 % for tensor + pipeline on A100) · 5,300 tokens/s · MFU 41.0% ·
 * checkpoint every 30 min (12.0 s stall), goodput 97.1%", then "outside what was validated: …"
 * when the scenario is;
 * the engine's reason when it has no step; null for a memory-only report.
 */
/** What a scenario that does not fit shows beside a step time or cost: they are the figures of
 *  a run that cannot start, had it the memory. */
export const UNFIT_NOTE = "does not fit, so it cannot start: this is what it would take if it fit";

export function estimateStepSummary(report: Report): string | null {
  const step = report.step;
  if (!step) return null;
  if (step.available === false || typeof step.time_s !== "number") {
    return `Step time: ${step.reason ?? "not simulated"}`;
  }
  const band = stepBandText(report);
  const parts = [`Step ${formatSeconds(step.time_s)}${band ? ` (${band.text})` : ""}`];
  if (report.fits === false) parts[0] = `If it fit (it does not, so it cannot start): s${parts[0].slice(1)}`;
  const tokens = report.throughput?.tokens_per_s;
  if (typeof tokens === "number") parts.push(`${formatNumber(tokens, 0)} tokens/s`);
  if (typeof report.mfu === "number") {
    const mp = step.mfu_peak;
    parts.push(mp?.precision === "fp8"
      ? `MFU ${formatPercent(report.mfu)} of the FP8 peak` +
        (typeof mp.mfu_16bit_peak === "number" ? ` (${formatPercent(mp.mfu_16bit_peak)} of the 16-bit peak)` : "")
      : `MFU ${formatPercent(report.mfu)}`);
  }
  const ck = report.checkpoint;
  if (ck && typeof ck.interval_s === "number" && typeof ck.goodput === "number") {
    parts.push(`checkpoint every ${formatDuration(ck.interval_s)} (${formatSeconds(ck.stall_s)} stall), ` +
      `goodput ${formatPercent(ck.goodput)}`);
  }
  const fp8 = fp8Line(step);
  if (fp8) parts.push(fp8);
  if (band?.outside) parts.push(band.outside.replace(/^Outside/, "outside").replace(/\.$/, ""));
  return parts.join(" · ");
}

const FP8_LIBRARIES: Record<string, string> = { transformer_engine: "Transformer Engine", torchao: "torchao" };

/** "FP8 delayed (hybrid, Transformer Engine): GEMMs at 1402.6 TFLOP/s, casts 0.17 ms a layer", or null
 *  without training.fp8 (the engine writes step.compute.fp8 only then). */
export function fp8Line(step: Step): string | null {
  const fp8 = step.compute?.fp8;
  if (!fp8) return null;
  const rate = typeof fp8.gemm_flops === "number"
    ? `GEMMs at ${(fp8.gemm_flops / 1e12).toFixed(1)} TFLOP/s`
    : `GEMMs at the FP8 peak ${(fp8.peak_flops_fp8 / 1e12).toFixed(0)} TFLOP/s × efficiency`;
  const c = step.compute;
  const cast = c && typeof c.fp8_cast_fwd_s === "number" && typeof c.fp8_cast_bwd_s === "number"
    ? `, casts ${formatSeconds(c.fp8_cast_fwd_s + c.fp8_cast_bwd_s)} a layer` : "";
  return `FP8 ${fp8.recipe} (${fp8.format}, ${FP8_LIBRARIES[fp8.implementation] ?? fp8.implementation}): ${rate}${cast}`;
}

/** The line that folds the engine's notes: "2 notes: Activations are a large share of HBM: …". */
export function estimateNotesSummary(notes: readonly string[], max = 90): string {
  const first = notes[0] ?? "";
  const shown = first.length > max ? `${first.slice(0, max - 1).trimEnd()}…` : first;
  return `${notes.length === 1 ? "1 note" : `${notes.length} notes`}: ${shown}`;
}

const WORDS: Record<string, string> = {
  zero: "ZeRO", gpu: "GPU", cpu: "CPU", hbm: "HBM", ddr: "DDR", nvme: "NVMe", cxl: "CXL",
  deepspeed: "DeepSpeed", fsdp: "FSDP", k: "K",
};

/** A snake_case key as words, without its unit suffix: "zero_paper_model_states_per_gpu_bytes" -> "ZeRO paper model states per GPU". */
export function humanizeKey(key: string): string {
  const words = key.replace(/_bytes$/, "").split("_").filter(Boolean).map((w) => WORDS[w] ?? w);
  if (!words.length) return key;
  const first = words[0];
  words[0] = first === first.toLowerCase() ? first.charAt(0).toUpperCase() + first.slice(1) : first;
  return words.join(" ");
}

export interface CrossCheckRow {
  name: string;
  value: string;
  note: string;
}

/** Other estimators' views of the scenario (report.cross_checks), bytes in GB and GiB. */
/** What a cross-check the engine reports as a bare number counts. */
export const CROSS_CHECK_NOTES: Record<string, string> = {
  zero_paper_model_states_per_gpu_bytes:
    "The ZeRO paper's Table 1 (SC'20): 2 + 2 + K bytes per parameter, sharded by the ZeRO stage; " +
    "model states only, no activations, buffers or runtime",
};

export function crossCheckRows(report: Report): CrossCheckRow[] {
  const rows: CrossCheckRow[] = [];
  const show = (key: string, v: unknown): string | null => {
    if (typeof v === "number") return key.endsWith("_bytes") ? formatBytes(v) : formatNumber(v, 2);
    if (typeof v === "string" || typeof v === "boolean") return String(v);
    return null;
  };
  for (const [key, val] of Object.entries(report.cross_checks ?? {})) {
    if (val !== null && typeof val === "object" && !Array.isArray(val)) {
      const obj = val as Record<string, unknown>;
      const note = typeof obj.view === "string" ? obj.view : typeof obj.note === "string" ? obj.note : "";
      for (const [k, v] of Object.entries(obj)) {
        if (k === "view" || k === "note") continue;
        const text = show(k, v);
        if (text !== null) rows.push({ name: `${humanizeKey(key)}: ${humanizeKey(k)}`, value: text, note });
      }
    } else {
      const text = show(key, val);
      let note = CROSS_CHECK_NOTES[key] ?? "";
      if (key === "zero_paper_model_states_per_gpu_bytes" && report.model?.trainable_params !== undefined) {
        note += "; counted as full fine-tuning: under LoRA only the adapters have gradients and optimizer states (the parts above)";
      }
      if (text !== null) rows.push({ name: humanizeKey(key), value: text, note });
    }
  }
  return rows;
}

/** Names of the convention's bytes-per-parameter entries. */
export const BYTES_PER_PARAM_LABELS: Record<string, string> = {
  params: "Parameters",
  grads: "Gradients",
  master_weights: "Master weights",
  optimizer_states: "Optimizer states",
  k: "K: optimizer total (master weights + states)",
  total: "Total",
};

export { CATEGORIES };

/** LoRA's trainable share of a report's model: "LoRA: 4.19 M trained (0.062 %), the rest frozen", or null
 *  when every parameter trains (the engine writes `trainable_params` only under `training.lora`). */
export function trainableLine(
  m: { num_params?: number; trainable_params?: number; lora_implementation?: string },
): string | null {
  if (m.trainable_params === undefined || !m.num_params) return null;
  const share = (100 * m.trainable_params) / m.num_params;
  const whose = m.lora_implementation === "automodel" ? " (NeMo AutoModel's LinearLoRA)"
    : m.lora_implementation === "peft" ? " (Hugging Face PEFT)" : "";
  return `LoRA${whose}: ${formatCount(m.trainable_params)} trained (${share < 0.1 ? share.toFixed(3) : share.toFixed(2)} %), the rest frozen`;
}

/** The expert-parallel layout of a report: "EP 8: 1 of 8 experts per GPU, expert tensor parallel 1,
 *  2 expert-data-parallel replicas", or null without expert parallelism (the engine writes the
 *  expert degrees into `parallelism` only then). `numExperts` from the scenario's model, when known. */
export function expertsLine(p: NonNullable<Report["parallelism"]>, numExperts?: number): string | null {
  const ep = p.expert_parallel;
  if (!ep || ep <= 1) return null;
  const per = numExperts ? `${numExperts / ep} of ${numExperts} experts per GPU` : `experts split ${ep} ways`;
  const edp = p.expert_data_parallel ?? 1;
  return `EP ${ep}: ${per}, expert tensor parallel ${p.expert_tensor_parallel ?? 1}, ` +
    `${edp} expert-data-parallel ${edp === 1 ? "replica" : "replicas"}`;
}

export interface StageRow {
  stages: string;
  role: string;
  layers: number;
  inFlight: number;
  stateBytes: number | null;
  activationBytes: number | null;
  totalBytes: number;
  phase: string;
  /** The row holding the stage whose memory is the verdict's. */
  worst: boolean;
}

/** memory.per_stage as table rows ("first", "middle", "last"); empty without a pipeline. */
export function stageRows(report: Report): StageRow[] {
  const rows = report.memory?.per_stage ?? [];
  const worst = report.memory?.stage_index;
  return rows.map((r) => {
    const [a, b] = r.stages.split("-").map(Number);
    return {
      stages: r.num_stages > 1 ? `${r.stages} (${r.num_stages})` : r.stages,
      role: r.stage,
      layers: r.layers,
      inFlight: r.micro_batches_in_flight,
      stateBytes: r.hbm_model_state_bytes ?? null,
      activationBytes: r.hbm_activation_bytes ?? null,
      totalBytes: r.hbm_total_bytes,
      phase: PHASE_LABELS[r.hbm_peak_phase ?? ""] ?? r.hbm_peak_phase ?? "",
      worst: worst !== undefined && worst >= a && worst <= (b ?? a),
    };
  });
}
