// A recommendation model's report sections: where the embedding rows live (`embedding`:
// bytes, rows, hit rate, lookup time and cost per tier) and how they are served
// (`ps`: parameter server vs model-parallel all-to-all). Pure readers of the report and
// ECharts option builders; only ECharts types are imported, so all of it runs in Node.

import type { BarSeriesOption } from "echarts/charts";
import type { AriaComponentOption, GridComponentOption, LegendComponentOption, TooltipComponentOption } from "echarts/components";
import type { ComposeOption } from "echarts/core";

import type { Report } from "../types";
import { GB, UNIT_GB, decimalUnit, formatBytes, formatBytesPerParam, formatGB, formatMsSig, formatNumber, formatPercent, formatTick, type ByteUnit } from "../units";

export { formatMsSig };
import type { ChartStyle } from "./series";
import { escapeHtml as esc } from "../html";
import { chartFrame } from "./option_parts";

// ------------------------------------------------------------------ report shapes
/** One tier of the embedding placement. Bytes and capacity are over all its devices. */
export interface EmbeddingTier {
  tier: string;
  /** GPUs for hbm, nodes for the others. */
  devices: number;
  rows: number;
  /** Stored bytes: values + optimizer state + hash overhead. */
  bytes: number;
  capacity_bytes: number | null;
  over_capacity_bytes?: number;
  /** Share of all lookups served here, 0..1. */
  hit_rate: number;
  sampled_hit_rate?: number | null;
  lookups_per_step?: number;
  bytes_per_step?: number;
  lookup_s: number;
  /** "bandwidth", "iops", "latency" or "none" (no lookups). */
  bound: string;
  latency_s?: number | null;
  read_iops?: number | null;
  read_bytes_per_s?: number | null;
  price_usd_per_gb?: number;
  cost_usd?: number;
  all_here_usd?: number;
  source?: string;
  price_source?: string;
}

export interface EmbeddingSection {
  tiers: EmbeddingTier[];
  tables?: { name: string; rows: number; dim: number; bytes: number; dtype?: string; row_bytes?: number; zipf_alpha?: number }[];
  total_rows?: number;
  total_bytes?: number;
  value_bytes?: number;
  embedding_optimizer?: string;
  fits?: boolean;
  lookups_per_step?: number;
  lookup_s_per_step?: number;
  pcie_busy_s?: number;
  dense_step_s?: number;
  hidden_s?: number;
  exposed_s?: number;
  cost_usd?: number;
  sample_check?: { lookups_per_table?: number; seed?: number; max_abs_error?: number; max_z?: number } | null;
  notes?: string[];
}

export interface PsLink {
  name: string;
  bytes: number;
  busy_s: number;
  demand_s?: number;
}

export interface PsDesign {
  design: string;
  step_time_s: number;
  bytes_on_wire: number;
  network_bytes?: number;
  traffic_bytes?: Record<string, number>;
  links?: PsLink[];
  servers?: number;
  replication?: number;
}

export interface PsComparison {
  available?: boolean;
  designs: PsDesign[];
  faster?: string;
  speedup?: number;
  notes?: string[];
}

/** An engine report that may carry a recommendation model's sections. */
export type RecsysReport = Omit<Report, "model"> & {
  model?: Report["model"] & { embedding_params?: number | null; dense_params?: number | null };
  embedding?: EmbeddingSection | null;
  ps?: PsComparison | null;
};

// ------------------------------------------------------------------ words and units
export const EMBEDDING_TIER_LABELS: Record<string, string> = {
  hbm: "HBM",
  ddr: "DDR",
  cxl: "CXL",
  pmem: "PMEM",
  nvme: "NVMe",
};

/** One hue per tier (Tableau 10), readable on light and dark backgrounds. */
export const EMBEDDING_TIER_COLORS: Record<string, string> = {
  hbm: "#4e79a7",
  ddr: "#59a14f",
  cxl: "#76b7b2",
  pmem: "#b07aa1",
  nvme: "#f28e2b",
};

/** Bound, short (table cells). */
export const BOUND_SHORT: Record<string, string> = { bandwidth: "bandwidth", iops: "IOPS", latency: "latency", none: "—" };

export const BOUND_LABELS: Record<string, string> = {
  bandwidth: "bandwidth (GB/s)",
  iops: "IOPS (random reads/s)",
  latency: "latency (reads in flight)",
  none: "— (no lookups)",
};

export const DESIGN_LABELS: Record<string, string> = {
  parameter_server: "Parameter server",
  all_to_all: "All-to-all",
};

export const DESIGN_COLORS: Record<string, string> = {
  parameter_server: "#f28e2b",
  all_to_all: "#4e79a7",
};

export const TRAFFIC_LABELS: Record<string, string> = {
  pull: "PS pull (rows to workers)",
  push: "PS push (row gradients to servers)",
  replication: "PS replication (to backup servers)",
  heartbeat: "Heartbeats",
  dense_allreduce: "Dense all-reduce (MLP gradients)",
  forward_all_to_all: "All-to-all, forward (pooled embeddings)",
  backward_all_to_all: "All-to-all, backward (their gradients)",
};

export const PS_LINK_LABELS: Record<string, string> = {
  nvlink: "NVLink",
  nic_out: "worker NIC out",
  nic_in: "worker NIC in",
  server_out: "PS server NIC out",
  server_in: "PS server NIC in",
};

const words = (key: string) => key.replace(/_/g, " ");
export const embeddingTierLabel = (t: string) => EMBEDDING_TIER_LABELS[t] ?? t.toUpperCase();
export const embeddingTierColor = (t: string) => EMBEDDING_TIER_COLORS[t] ?? "#bab0ac";
export const designLabel = (d: string) => DESIGN_LABELS[d] ?? words(d);
export const designColor = (d: string) => DESIGN_COLORS[d] ?? "#bab0ac";
export const boundLabel = (b: string) => BOUND_LABELS[b] ?? words(b);
export const trafficLabel = (k: string) => TRAFFIC_LABELS[k] ?? words(k);
export const psLinkLabel = (k: string) => PS_LINK_LABELS[k] ?? words(k);
/** "limited by IOPS (random reads/s)", or "no lookups". */
export const boundPhrase = (b: string) => (b === "none" || !b ? "no lookups" : `limited by ${boundLabel(b)}`);

/** "16 GPUs", "1 node": the devices a tier's bytes are spread over. */
export function devicesText(tier: string, devices: number): string {
  const unit = tier === "hbm" ? "GPU" : "node";
  return `${formatNumber(devices, 0)} ${unit}${devices === 1 ? "" : "s"}`;
}

/** US dollars, whole: 62725.5 -> "$62,726". */
export function formatUSD(usd: number): string {
  return `$${formatNumber(usd, 0)}`;
}

/** Gigabytes for narrow places: 3 significant-ish digits, "0.37 GB", "49.1 GB", "1,332 GB". */
export function formatGBShort(bytes: number): string {
  return formatShortIn(bytes, UNIT_GB);
}

/** Bytes in `unit`, 0-2 decimals by size as `formatGBShort`: 0.2e12 in TB -> "0.20 TB". */
export function formatShortIn(bytes: number, unit: ByteUnit): string {
  const x = bytes / unit.bytes;
  const abs = Math.abs(x);
  return `${formatNumber(x, abs === 0 || abs >= 100 ? 0 : abs >= 10 ? 1 : 2)} ${unit.symbol}`;
}

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
/** Chart values kept to 4 decimals so options compare exactly. */
const r4 = (x: number) => Math.round(x * 1e4) / 1e4;

// ------------------------------------------------------------------ embedding placement
export function hasEmbedding(report: RecsysReport): boolean {
  return Array.isArray(report.embedding?.tiers) && report.embedding!.tiers.length > 0;
}

export interface EmbeddingTierRow {
  tier: string;
  label: string;
  devices: number;
  devicesText: string;
  rows: number;
  bytes: number;
  /** null: no capacity limit given. */
  capacityBytes: number | null;
  overBytes: number;
  /** bytes / capacity, 0..; null without a capacity. */
  used: number | null;
  hitRate: number;
  lookupS: number;
  bound: string;
  boundText: string;
  costUsd: number | null;
  priceUsdPerGB: number | null;
}

/** One row per tier the engine placed rows on (or could have), hottest first. */
export function embeddingTierRows(report: RecsysReport): EmbeddingTierRow[] {
  if (!hasEmbedding(report)) return [];
  return report.embedding!.tiers.map((t) => {
    const capacity = num(t.capacity_bytes);
    const over = num(t.over_capacity_bytes) ?? (capacity !== null ? Math.max(0, t.bytes - capacity) : 0);
    return {
      tier: t.tier,
      label: embeddingTierLabel(t.tier),
      devices: t.devices,
      devicesText: devicesText(t.tier, t.devices),
      rows: t.rows,
      bytes: t.bytes,
      capacityBytes: capacity,
      overBytes: over,
      used: capacity !== null && capacity > 0 ? t.bytes / capacity : null,
      hitRate: t.hit_rate,
      lookupS: t.lookup_s,
      bound: t.bound,
      boundText: boundLabel(t.bound),
      costUsd: num(t.cost_usd),
      priceUsdPerGB: num(t.price_usd_per_gb),
    };
  });
}

export interface EmbeddingTotals {
  rows: number;
  bytes: number;
  /** Bytes of the embedding values alone (what published table sizes count). */
  valueBytes: number | null;
  capacityBytes: number | null;
  lookupsPerStep: number | null;
  /** The engine's lookup time per step (tiers overlap, so not their sum). */
  lookupS: number | null;
  costUsd: number | null;
  optimizer: string | null;
}

export function embeddingTotals(report: RecsysReport): EmbeddingTotals {
  const e = report.embedding;
  const rows = embeddingTierRows(report);
  const sum = (f: (r: EmbeddingTierRow) => number | null) =>
    rows.every((r) => f(r) !== null) ? rows.reduce((s, r) => s + (f(r) as number), 0) : null;
  return {
    rows: num(e?.total_rows) ?? rows.reduce((s, r) => s + r.rows, 0),
    bytes: num(e?.total_bytes) ?? rows.reduce((s, r) => s + r.bytes, 0),
    valueBytes: num(e?.value_bytes),
    capacityBytes: sum((r) => r.capacityBytes),
    lookupsPerStep: num(e?.lookups_per_step),
    lookupS: num(e?.lookup_s_per_step),
    costUsd: num(e?.cost_usd) ?? sum((r) => r.costUsd),
    optimizer: e?.embedding_optimizer ?? null,
  };
}

// ------------------------------------------------------------------ bytes per parameter
/** A recommendation model alone: embedding rows and no transformer (no layers). */
export function isRecsysOnly(report: RecsysReport): boolean {
  return hasEmbedding(report) && !num(report.model?.num_layers);
}

export interface ParamBytesRow {
  key: "embedding" | "dense";
  label: string;
  params: number;
  /** Bytes each parameter takes, all its state included. */
  bytesPerParam: number;
  /** What the bytes are: "4 B/param of values (fp32) + 4 B/param of Adagrad state". */
  detail: string;
}

const OPTIMIZER_NAMES: Record<string, string> = { sgd: "SGD", adagrad: "Adagrad", rowwise_adagrad: "row-wise Adagrad" };
const bpp = formatBytesPerParam;

/**
 * What a parameter of a recommendation model costs in bytes, instead of a transformer's
 * bytes-per-parameter convention: embedding rows as stored (values + the embedding
 * optimizer's state, over all tiers), dense MLP parameters by the convention's parameter,
 * gradient and optimizer bytes (data parallel: every GPU holds all of them).
 */
export function recsysParamBytesRows(report: RecsysReport): ParamBytesRow[] {
  if (!hasEmbedding(report)) return [];
  const rows: ParamBytesRow[] = [];
  const m = report.model;
  const e = report.embedding!;
  const embParams = num(m?.embedding_params);
  const stored = embeddingTotals(report).bytes;
  if (embParams && embParams > 0 && stored > 0) {
    const values = num(e.value_bytes);
    const dtypes = [...new Set((e.tables ?? []).map((t) => t.dtype).filter((d): d is string => !!d))];
    const optimizer = e.embedding_optimizer ? OPTIMIZER_NAMES[e.embedding_optimizer] ?? e.embedding_optimizer : "optimizer";
    let detail = "values and optimizer state, as stored";
    if (values !== null && values > 0) {
      const rest = stored - values;
      detail = `${bpp(values / embParams)} of values${dtypes.length === 1 ? ` (${dtypes[0]})` : ""}`;
      if (rest > 0) detail += ` + ${bpp(rest / embParams)} of ${optimizer} state`;
    }
    rows.push({ key: "embedding", label: "Embedding tables", params: embParams, bytesPerParam: stored / embParams, detail });
  }
  const dense = num(m?.dense_params);
  const conv = report.convention;
  const b = conv?.bytes_per_param ?? {};
  if (dense && dense > 0 && num(b.params) !== null && num(b.grads) !== null && num(b.k) !== null) {
    rows.push({
      key: "dense",
      label: "Dense MLPs",
      params: dense,
      bytesPerParam: b.params + b.grads + b.k,
      detail: `${bpp(b.params)} parameters + ${bpp(b.grads)} gradients + ${bpp(b.k)} optimizer states` +
        `${conv?.name ? ` (${conv.name} convention)` : ""}, on every GPU`,
    });
  }
  return rows;
}

export interface LookupOverlap {
  lookupS: number;
  denseS: number;
  hiddenS: number;
  exposedS: number;
  /** Share of the lookup time hidden behind dense compute, 0..1. */
  hiddenFraction: number;
  sentence: string;
}

/** Embedding lookups against the dense compute they overlap with (prefetched a batch ahead). */
export function lookupOverlap(report: RecsysReport): LookupOverlap | null {
  const e = report.embedding;
  const lookupS = num(e?.lookup_s_per_step);
  const denseS = num(e?.dense_step_s);
  if (lookupS === null || denseS === null) return null;
  const exposedS = num(e?.exposed_s) ?? Math.max(0, lookupS - denseS);
  const hiddenS = num(e?.hidden_s) ?? lookupS - exposedS;
  const head = `Embedding lookups take ${formatMsSig(lookupS)} per step against ${formatMsSig(denseS)} of dense compute`;
  const sentence = exposedS > 0
    ? `${head}: ${formatMsSig(hiddenS)} is hidden behind the compute and ${formatMsSig(exposedS)} is exposed, adding to the step.`
    : `${head}: all of it is hidden when rows are prefetched a batch ahead.`;
  return { lookupS, denseS, hiddenS, exposedS, hiddenFraction: lookupS > 0 ? hiddenS / lookupS : 1, sentence };
}

export type EmbeddingChartOption = ComposeOption<
  BarSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption | AriaComponentOption
>;

export const HIT_AXIS_NAME = "Lookups served (%)";
export const STORED_AXIS_NAME = "Stored";
export const HIT_SERIES = "Hit rate";
export const STORED_SERIES = "Stored";
export const CAPACITY_SERIES = "Capacity";
export const OVER_SERIES = "Over capacity";


/** Tooltip of a tier: bytes against capacity (GB and GiB), rows, hit rate, lookup time. */
export function embeddingTierTooltipHTML(row: EmbeddingTierRow): string {
  const per = row.tier === "hbm" ? "GPU" : "node";
  const lines = [`<strong>${esc(row.label)}, ${esc(row.devicesText)}</strong>`];
  lines.push(`Stored: ${formatBytes(row.bytes)}`);
  if (row.capacityBytes !== null) {
    lines.push(`Capacity: ${formatBytes(row.capacityBytes)}${row.used !== null ? ` (${formatPercent(row.used)} used)` : ""}`);
    if (row.devices > 1) lines.push(`Per ${per}: ${formatGB(row.bytes / row.devices)} of ${formatGB(row.capacityBytes / row.devices)}`);
  } else {
    lines.push("Capacity: no limit given");
  }
  if (row.overBytes > 0) lines.push(`<strong>Over by ${formatBytes(row.overBytes)}</strong>`);
  lines.push(`Rows: ${formatNumber(row.rows, 0)}`);
  lines.push(`Hit rate: ${formatPercent(row.hitRate)} of lookups`);
  lines.push(`Lookup time: ${formatMsSig(row.lookupS)} per step, ${esc(boundPhrase(row.bound))}`);
  return lines.join("<br>");
}

/** The unit a tier's bytes grid reads in: GB, TB or PB by the larger of what it stores and holds. */
export function storedUnit(row: EmbeddingTierRow): ByteUnit {
  return decimalUnit(Math.max(row.bytes, row.capacityBytes ?? 0));
}

/** Under a tier's bytes bar: the tier and devices, then "stored / capacity" in its grid's unit. */
export function storedAxisLabel(row: EmbeddingTierRow): string {
  const unit = storedUnit(row);
  const stored = formatShortIn(row.bytes, unit).slice(0, -(unit.symbol.length + 1));
  const cap = row.capacityBytes !== null ? formatShortIn(row.capacityBytes, unit) : "no limit";
  return `${row.label} · ${row.devicesText}\n${stored} / ${cap}`;
}

/**
 * Two panels in one chart. Left: the share of lookups each tier serves (%), one bar per
 * tier. Right: the bytes stored on each tier against its capacity (a dashed frame), one
 * small grid per tier with its own scale and unit (`storedUnit`: HBM holds hundreds of GB,
 * NVMe tens of TB: one shared axis would flatten the small ones).
 */
export function embeddingChartOption(report: RecsysReport, style: ChartStyle = {}): EmbeddingChartOption {
  const rows = embeddingTierRows(report);
  if (!rows.length) return { series: [] };
  const frame = style.dark ? "#d0d4da" : "#3d4451";
  const overColor = style.dark ? "#ff8a80" : "#c62828";
  const labelBg = style.dark ? "#13171f" : "#ffffff";
  const hitWidth = rows.length > 3 ? 30 : 28;
  const start = hitWidth + 6;
  const slot = (100 - start) / rows.length;
  const pct = (x: number) => `${formatNumber(x, 2)}%`;

  const grid: GridComponentOption[] = [
    { left: "0%", width: pct(hitWidth), top: 48, bottom: 8, outerBoundsMode: "same", outerBoundsContain: "all" },
    ...rows.map((_, i) => ({
      left: pct(start + i * slot + 0.5),
      width: pct(slot - 1),
      top: 48,
      bottom: 8,
      outerBoundsMode: "same" as const,
      outerBoundsContain: "all" as const,
    })),
  ];
  const over = (r: EmbeddingTierRow) => r.overBytes > 0;
  const xAxis = [
    {
      type: "category" as const,
      gridIndex: 0,
      data: rows.map((r) => r.tier),
      axisTick: { show: false },
      axisLabel: { interval: 0, formatter: (t: string) => embeddingTierLabel(t) },
    },
    ...rows.map((r, i) => ({
      type: "category" as const,
      gridIndex: i + 1,
      data: [r.tier],
      axisTick: { show: false },
      axisLabel: {
        interval: 0,
        lineHeight: 16,
        formatter: () => storedAxisLabel(r),
        color: over(r) ? overColor : undefined,
        fontWeight: over(r) ? ("bold" as const) : ("normal" as const),
      },
    })),
  ];
  const yAxis = [
    {
      type: "value" as const,
      gridIndex: 0,
      name: HIT_AXIS_NAME,
      nameTextStyle: { align: "left" as const },
      min: 0,
      max: 100,
      interval: 25,
      axisLabel: { formatter: (v: number) => `${v}%` },
      splitLine: { lineStyle: { opacity: 0.4 } },
    },
    ...rows.map((r, i) => ({
      type: "value" as const,
      gridIndex: i + 1,
      name: i === 0 ? `${STORED_AXIS_NAME} (${storedUnit(r).symbol})` : storedUnit(r).symbol,
      nameTextStyle: { align: "left" as const },
      min: 0,
      // ECharts' tick text (distinct at any interval), with the unit
      axisLabel: { formatter: `{value} ${storedUnit(r).symbol}` },
      splitLine: { lineStyle: { opacity: 0.4 } },
    })),
  ];

  const series: BarSeriesOption[] = [
    {
      type: "bar",
      name: HIT_SERIES,
      xAxisIndex: 0,
      yAxisIndex: 0,
      barWidth: "55%",
      barMaxWidth: 90,
      // A label of a bar near 100% goes inside its top, clear of the axis name.
      data: rows.map((r) => ({
        value: r4(r.hitRate * 100),
        itemStyle: { color: embeddingTierColor(r.tier) },
        ...(r.hitRate >= 0.85 ? { label: { position: "insideTop" as const, color: "#ffffff" } } : {}),
      })),
      label: {
        show: true,
        position: "top",
        formatter: (p: unknown) => {
          const row = rows[(p as { dataIndex: number }).dataIndex];
          return row ? formatPercent(row.hitRate) : "";
        },
      },
    },
  ];
  rows.forEach((r, i) => {
    // Over capacity: the tier's colour up to the capacity, red above it.
    const fits = r.overBytes > 0 ? r.bytes - r.overBytes : r.bytes;
    const unit = storedUnit(r);
    series.push({
      type: "bar",
      name: STORED_SERIES,
      stack: `stored-${r.tier}`,
      xAxisIndex: i + 1,
      yAxisIndex: i + 1,
      barWidth: "55%",
      barMaxWidth: 120,
      barGap: "-100%",
      itemStyle: { color: embeddingTierColor(r.tier) },
      data: [r4(fits / unit.bytes)],
    });
    if (r.overBytes > 0) {
      series.push({
        type: "bar",
        name: OVER_SERIES,
        stack: `stored-${r.tier}`,
        xAxisIndex: i + 1,
        yAxisIndex: i + 1,
        barWidth: "55%",
        barMaxWidth: 120,
        itemStyle: { color: overColor },
        data: [r4(r.overBytes / unit.bytes)],
      });
    }
    if (r.capacityBytes !== null) {
      series.push({
        type: "bar",
        name: CAPACITY_SERIES,
        xAxisIndex: i + 1,
        yAxisIndex: i + 1,
        barWidth: "55%",
        barMaxWidth: 120,
        barGap: "-100%",
        z: 3,
        silent: true,
        itemStyle: { color: "transparent", borderColor: frame, borderWidth: 2, borderType: "dashed" },
        label: {
          show: true,
          // over capacity, the frame's top is inside the bar: the label goes beside it
          position: r.overBytes > 0 ? "right" : "top",
          color: frame,
          backgroundColor: labelBg,
          padding: [1, 4],
          borderRadius: 3,
          formatter: () => `cap. ${formatShortIn(r.capacityBytes as number, unit)}`,
        },
        data: [r4((r.capacityBytes as number) / unit.bytes)],
      });
    }
  });

  return {
    ...chartFrame(),
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => {
        const { name, seriesName } = p as { name?: string; seriesName?: string };
        const row = rows.find((r) => r.tier === name);
        if (!row) return "";
        if (seriesName === HIT_SERIES) {
          return `<strong>${esc(row.label)}</strong><br>${formatPercent(row.hitRate)} of lookups; ` +
            `${formatMsSig(row.lookupS)} per step, ${esc(boundPhrase(row.bound))}`;
        }
        return embeddingTierTooltipHTML(row);
      },
    },
    grid,
    xAxis,
    yAxis,
    series,
  };
}

// ------------------------------------------------------------------ parameter server vs all-to-all
/**
 * A recommendation-model (DLRM-style, ``recsys``) report: it has the embedding section. The
 * engine also compares an expert parameter server with all-to-all for MoE LLMs in ``ps``,
 * but the run page's "PS vs all-to-all" section speaks of embedding rows, so it is shown
 * for recsys reports only.
 */
export function isRecsysReport(report: RecsysReport): boolean {
  const e = report.embedding as Record<string, unknown> | undefined | null;
  return !!e && typeof e === "object" && Object.keys(e).length > 0;
}

/** Whether the run page shows the parameter server vs all-to-all section: recsys only. */
export function showsPsSection(report: RecsysReport): boolean {
  return isRecsysReport(report) && !!report.ps;
}

export function hasPsComparison(report: RecsysReport): boolean {
  return !!report.ps && report.ps.available !== false && Array.isArray(report.ps.designs) && report.ps.designs.length > 0;
}

export interface PsDesignRow {
  design: string;
  label: string;
  stepS: number;
  bytesOnWire: number;
  networkBytes: number | null;
  traffic: { key: string; label: string; bytes: number }[];
  busiest: { name: string; label: string; seconds: number } | null;
  faster: boolean;
}

export function psDesignRows(report: RecsysReport): PsDesignRow[] {
  if (!hasPsComparison(report)) return [];
  const ps = report.ps!;
  return ps.designs.map((d) => {
    const links = (d.links ?? []).map((l) => ({ ...l, seconds: num(l.demand_s) ?? l.busy_s }));
    const neck = links.reduce<(typeof links)[number] | null>((a, l) => (l.seconds > (a?.seconds ?? 0) ? l : a), null);
    return {
      design: d.design,
      label: designLabel(d.design),
      stepS: d.step_time_s,
      bytesOnWire: d.bytes_on_wire,
      networkBytes: num(d.network_bytes),
      traffic: Object.entries(d.traffic_bytes ?? {})
        .filter(([, b]) => b > 0)
        .map(([key, bytes]) => ({ key, label: trafficLabel(key), bytes })),
      busiest: neck ? { name: neck.name, label: psLinkLabel(neck.name), seconds: neck.seconds } : null,
      faster: d.design === ps.faster,
    };
  });
}

/** The faster design and by how much, in words; null without a comparison. */
export function psSummary(report: RecsysReport): string | null {
  const rows = psDesignRows(report);
  if (rows.length < 2) return null;
  const fast = rows.find((r) => r.faster) ?? rows.reduce((a, r) => (r.stepS < a.stepS ? r : a));
  const slow = rows.filter((r) => r !== fast).reduce((a, r) => (r.stepS > a.stepS ? r : a));
  const speedup = num(report.ps?.speedup) ?? (fast.stepS > 0 ? slow.stepS / fast.stepS : 1);
  const lower = (s: string) => (/^[A-Z][a-z]/.test(s) ? s.charAt(0).toLowerCase() + s.slice(1) : s);
  if (speedup < 1.005) {
    return `${fast.label} and the ${lower(slow.label)} take the same time: ${formatMsSig(fast.stepS)} per step.`;
  }
  const bytes = fast.bytesOnWire <= slow.bytesOnWire
    ? `moving ${formatGBShort(fast.bytesOnWire)} instead of ${formatGBShort(slow.bytesOnWire)} on the wire`
    : `though it moves more on the wire: ${formatGBShort(fast.bytesOnWire)} instead of ${formatGBShort(slow.bytesOnWire)}`;
  return `${fast.label} is ${formatNumber(speedup, speedup >= 10 ? 1 : 2)}× faster than the ${lower(slow.label)}: ` +
    `${formatMsSig(fast.stepS)} vs ${formatMsSig(slow.stepS)} per step, ${bytes}.`;
}

export type PsChartOption = EmbeddingChartOption;

export const PS_TIME_AXIS_NAME = "Step time";
export const PS_BYTES_AXIS_NAME = "Bytes on wire per step";
export const PS_CATEGORIES = { time: "Step time", bytes: "Bytes on wire" } as const;

/** Traffic in GB with 2 decimals; what rounds to nothing is "< 0.01 GB" (heartbeats). */
export const trafficGB = (bytes: number) => (bytes > 0 && bytes < 0.005 * GB ? "< 0.01 GB" : formatGB(bytes, 2));

/** Tooltip of a design: time, bytes, and the traffic that makes up the bytes. */
export function psTooltipHTML(row: PsDesignRow): string {
  const lines = [`<strong>${esc(row.label)}${row.faster ? " (faster)" : ""}</strong>`,
    `Step time: ${formatMsSig(row.stepS)}`, `Bytes on wire: ${formatBytes(row.bytesOnWire, 2)} per step`];
  if (row.networkBytes !== null && row.networkBytes !== row.bytesOnWire) {
    lines.push(`Between nodes: ${formatGB(row.networkBytes, 2)}`);
  }
  for (const t of row.traffic) lines.push(`&nbsp;&nbsp;${esc(t.label)}: ${trafficGB(t.bytes)}`);
  if (row.busiest) lines.push(`Busiest link: ${esc(row.busiest.label)}, ${formatMsSig(row.busiest.seconds)} of transfers`);
  return lines.join("<br>");
}

/**
 * Grouped bars, one colour per design: step time in the left grid, bytes on the wire per
 * step in the right one, each with its own axis and the unit its largest bar reads in
 * (ms below a second, else s; GB, TB or PB).
 */
export function psChartOption(report: RecsysReport, style: ChartStyle = {}): PsChartOption {
  const rows = psDesignRows(report);
  if (!rows.length) return { series: [] };
  const labelColor = style.dark ? "#e0e3e7" : "#23262d";
  const common = { top: 56, bottom: 8, outerBoundsMode: "same" as const, outerBoundsContain: "all" as const };
  const grid: GridComponentOption[] = [
    { left: "0%", width: "46%", ...common },
    { left: "54%", width: "46%", ...common },
  ];
  const xAxis = [
    { type: "category" as const, gridIndex: 0, data: [PS_CATEGORIES.time], axisTick: { show: false } },
    { type: "category" as const, gridIndex: 1, data: [PS_CATEGORIES.bytes], axisTick: { show: false } },
  ];
  const seconds = Math.max(...rows.map((r) => r.stepS)) >= 1;
  const time = seconds ? { symbol: "s", per: 1 } : { symbol: "ms", per: 1e3 };
  const bytes = decimalUnit(Math.max(...rows.map((r) => r.bytesOnWire)));
  const tick = (v: number) => formatNumber(v, v !== 0 && Math.abs(v) < 1 ? 2 : 0);
  const yAxis = [
    { type: "value" as const, gridIndex: 0, name: `${PS_TIME_AXIS_NAME} (${time.symbol})`, min: 0,
      nameTextStyle: { align: "left" as const },
      axisLabel: { formatter: (v: number) => `${seconds ? formatTick(v) : tick(v)} ${time.symbol}` },
      splitLine: { lineStyle: { opacity: 0.4 } } },
    { type: "value" as const, gridIndex: 1, name: `${PS_BYTES_AXIS_NAME} (${bytes.symbol})`, min: 0,
      nameTextStyle: { align: "left" as const },
      axisLabel: { formatter: (v: number) => `${tick(v)} ${bytes.symbol}` },
      splitLine: { lineStyle: { opacity: 0.4 } } },
  ];
  const series: BarSeriesOption[] = [];
  for (const r of rows) {
    const base = { type: "bar" as const, name: r.label, itemStyle: { color: designColor(r.design) }, barMaxWidth: 90 };
    series.push({
      ...base,
      xAxisIndex: 0,
      yAxisIndex: 0,
      data: [r4(r.stepS * time.per)],
      label: { show: true, position: "top", color: labelColor, formatter: () => formatMsSig(r.stepS) },
    });
    series.push({
      ...base,
      xAxisIndex: 1,
      yAxisIndex: 1,
      data: [r4(r.bytesOnWire / bytes.bytes)],
      label: { show: true, position: "top", color: labelColor, formatter: () => formatShortIn(r.bytesOnWire, bytes) },
    });
  }
  return {
    ...chartFrame(),
    legend: {
      top: 0,
      data: rows.map((r) => ({ name: r.label, itemStyle: { color: designColor(r.design) } })),
      formatter: (name: string) => {
        const row = rows.find((r) => r.label === name);
        return row?.faster ? `${name} (faster)` : name;
      },
    },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => {
        const row = rows.find((r) => r.label === (p as { seriesName?: string }).seriesName);
        return row ? psTooltipHTML(row) : "";
      },
    },
    grid,
    xAxis,
    yAxis,
    series,
  };
}
