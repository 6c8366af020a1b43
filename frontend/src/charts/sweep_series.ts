// Pure builders of a sweep's charts: a heatmap of one metric over the grid (infeasible,
// invalid, failed and pending points drawn as such, never coloured as values) and the
// Pareto chart of cost per million tokens against step time. No DOM, no ECharts runtime.

import type { HeatmapSeriesOption, LineSeriesOption, ScatterSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
  VisualMapComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import type { Axis, Sweep, SweepPoint } from "../dashboard/types";
import { formatUSD } from "../dashboard/format";
import { GIB, formatNumber, formatPercent, formatSeconds, formatTick } from "../units";
import type { ChartStyle } from "./series";
import { distinctDecimals, niceAxis, ratioAxis, tickText, type NiceAxis } from "./ticks";
import { escapeHtml as esc } from "../html";
import { chartFrame } from "./option_parts";

export type SweepChartOption = ComposeOption<
  | HeatmapSeriesOption
  | ScatterSeriesOption
  | LineSeriesOption
  | GridComponentOption
  | LegendComponentOption
  | TooltipComponentOption
  | VisualMapComponentOption
  | AriaComponentOption
>;

export type MetricKey =
  | "step_time_s"
  | "usd_per_million_tokens"
  | "usd_per_hour"
  | "hbm_total_bytes"
  | "tokens_per_s"
  | "mfu"
  | "mfu_16bit_peak"
  | "goodput";

export interface Metric {
  key: MetricKey;
  label: string;
  /** The unit the heatmap's scale is in. */
  scaleUnit: string;
  better: "min" | "max";
  /** The engine's value in the scale's unit (bytes -> GiB, fraction -> %). */
  toScale: (v: number) => number;
  /** A cell's text, with its unit. */
  short: (v: number) => string;
  /** A value already in the scale's unit as text with `decimals` decimals and the unit: "99.832%". */
  cell: (scaled: number, decimals: number) => string;
  /** Fewest decimals the heatmap shows (cents for dollars). */
  minDecimals: number;
}

export const METRICS: Metric[] = [
  { key: "step_time_s", label: "Step time", scaleUnit: "s", better: "min",
    toScale: (v) => v, short: (v) => formatSeconds(v), cell: (v, d) => `${formatNumber(v, d)} s`, minDecimals: 0 },
  { key: "usd_per_million_tokens", label: "Cost per 1M tokens", scaleUnit: "USD per 1M tokens", better: "min",
    toScale: (v) => v, short: (v) => `${formatUSD(v)}/Mtok`, cell: (v, d) => `$${formatNumber(v, d)}/Mtok`, minDecimals: 2 },
  { key: "usd_per_hour", label: "Cost per hour", scaleUnit: "USD/h", better: "min",
    toScale: (v) => v, short: (v) => `${formatUSD(v)}/h`, cell: (v, d) => `$${formatNumber(v, d)}/h`, minDecimals: 2 },
  // GPU memory in GiB, as nvidia-smi and torch.cuda report it
  { key: "hbm_total_bytes", label: "HBM used per GPU", scaleUnit: "GiB", better: "min",
    toScale: (v) => v / GIB, short: (v) => `${formatNumber(v / GIB, 1)} GiB`, cell: (v, d) => `${formatNumber(v, d)} GiB`,
    minDecimals: 0 },
  { key: "tokens_per_s", label: "Throughput", scaleUnit: "tokens/s", better: "max",
    toScale: (v) => v, short: (v) => `${formatNumber(v, 0)} tok/s`, cell: (v, d) => `${formatNumber(v, d)} tok/s`,
    minDecimals: 0 },
  // over each point's GEMM peak (FP8 for an FP8 point): compares only points of one precision
  { key: "mfu", label: "Model FLOPs utilization", scaleUnit: "%", better: "max",
    toScale: (v) => v * 100, short: (v) => formatPercent(v), cell: (v, d) => `${formatNumber(v, d)}%`, minDecimals: 1 },
  // every point over the dense 16-bit peak: FP8 and 16-bit points compare
  { key: "mfu_16bit_peak", label: "MFU over the 16-bit peak", scaleUnit: "%", better: "max",
    toScale: (v) => v * 100, short: (v) => formatPercent(v), cell: (v, d) => `${formatNumber(v, d)}%`, minDecimals: 1 },
  { key: "goodput", label: "Checkpoint goodput", scaleUnit: "%", better: "max",
    toScale: (v) => v * 100, short: (v) => formatPercent(v, 2), cell: (v, d) => `${formatNumber(v, d)}%`, minDecimals: 2 },
];

/** The metric's name with its unit for a menu: "HBM used per GPU (GiB)", "Step time (s)". */
export function metricLabel(m: Metric): string {
  return `${m.label} (${m.scaleUnit})`;
}

const UNPLOTTED_NOUNS: Record<string, [string, string]> = {
  invalid: ["invalid point", "invalid points"],
  failed: ["failed point", "failed points"],
  cancelled: ["cancelled point", "cancelled points"],
  missing: ["point without a step time or cost", "points without a step time or cost"],
};

/**
 * Why points are missing from the Pareto chart, counted in words: "3 invalid points,
 * 1 failed point". Pending points are left out (they are not run yet). "" when none.
 */
export function unplottedSummary(points: readonly SweepPoint[], metric: Metric): string {
  const counts = new Map<string, number>();
  for (const p of points) {
    if (p.status === "pending") continue;
    const c = pointClass(p, metric);
    const key = c === "value" || c === "infeasible" || c === "pending" ? "missing" : c;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts].map(([k, n]) => {
    const [one, many] = UNPLOTTED_NOUNS[k] ?? [`${k} point`, `${k} points`];
    return `${n} ${n === 1 ? one : many}`;
  }).join(", ");
}

/**
 * A point's MFU for the sweep's table: its MFU, and for an FP8 point the figure over the
 * 16-bit peak first (what compares with the 16-bit points) with its FP8-peak figure after:
 * "61.2% (FP8: 30.6% of its FP8 peak)". "—" without a step.
 */
export function mfuText(p: SweepPoint): string {
  const mfu = typeof p.mfu === "number" && Number.isFinite(p.mfu) ? p.mfu : null;
  if (mfu === null) return "—";
  const mfu16 = p.mfu_16bit_peak;
  if (p.mfu_peak_precision === "fp8" && typeof mfu16 === "number" && Number.isFinite(mfu16)) {
    return `${formatPercent(mfu16)} (FP8: ${formatPercent(mfu)} of its FP8 peak)`;
  }
  return formatPercent(mfu);
}

/** The table's MFU heading: "MFU (16-bit peak)" once a point ran FP8, else "MFU". */
export function mfuHeading(points: readonly SweepPoint[]): string {
  return points.some((p) => p.mfu_peak_precision === "fp8") ? "MFU (16-bit peak)" : "MFU";
}

export function metricByKey(key: string | null | undefined): Metric {
  return METRICS.find((m) => m.key === key) ?? METRICS[0];
}

/** What a point is, for drawing: a value to colour, or why it has none. */
export type PointClass = "value" | "infeasible" | "invalid" | "failed" | "cancelled" | "pending" | "missing";

export const CLASS_LABELS: Record<Exclude<PointClass, "value">, string> = {
  infeasible: "Does not fit",
  invalid: "Invalid scenario",
  failed: "Failed",
  cancelled: "Cancelled",
  pending: "Not yet run",
  missing: "No value",
};

export function pointClass(p: SweepPoint, metric: Metric): PointClass {
  if (p.status === "pending") return "pending";
  if (p.status === "failed" && p.valid === false) return "invalid";     // the engine refused it
  if (p.status === "failed") return "failed";
  if (p.status === "cancelled") return "cancelled";
  if (p.valid === false) return "invalid";
  if (p.fits === false) return "infeasible";
  const v = p[metric.key];
  return typeof v === "number" && Number.isFinite(v) ? "value" : "missing";
}

/**
 * A value of an axis as text: 4 -> "4", "nvme" -> "nvme", true -> "true"; a null (the
 * field's null) -> "none", an object -> its JSON, never "null" or "[object Object]".
 */
export const valueText = (v: unknown) => (typeof v === "number" ? formatTick(v, 4)
  : v === null || v === undefined ? "none" : typeof v === "object" ? JSON.stringify(v) : String(v));

/**
 * A value of `axis` as text, by its display name where the server sent one ("ZeRO-3" for
 * zero3, "NVIDIA DGX H100" for dgx-h100, "off" for a null FP8), else as `valueText` writes
 * it. Found by its JSON: a point's object value is a copy of the axis's, not the same one.
 */
export function axisValueText(axis: Axis, v: unknown): string {
  const key = JSON.stringify(v ?? null);
  const i = axis.values.findIndex((x) => JSON.stringify(x) === key);
  const label = i >= 0 ? axis.value_labels?.[i] : null;
  return label ?? valueText(v);
}

/** Axis title: its label and, when it differs, the dotted path. */
export function axisTitle(axis: Axis): string {
  return axis.label && axis.label !== axis.path ? `${axis.label} (${axis.path})` : axis.path;
}

export interface Cell {
  x: number;
  y: number;
  point: SweepPoint;
  cls: PointClass;
}

/** Every point's place in the grid: x = its value of the first axis, y = of the second. */
export function heatmapCells(sweep: Sweep, metric: Metric): Cell[] {
  const [a, b] = sweep.axes;
  const xi = new Map(a.values.map((v, i) => [JSON.stringify(v), i]));
  const yi = b ? new Map(b.values.map((v, i) => [JSON.stringify(v), i])) : null;
  return sweep.points.map((p) => ({
    x: xi.get(JSON.stringify(p.values[a.path])) ?? 0,
    y: yi && b ? yi.get(JSON.stringify(p.values[b.path])) ?? 0 : 0,
    point: p,
    cls: pointClass(p, metric),
  }));
}

const CLASS_COLORS: Record<Exclude<PointClass, "value">, [string, string]> = {
  // [light, dark]
  infeasible: ["#b9bec7", "#4a505a"],
  invalid: ["#d5d8dc", "#3d424a"],
  failed: ["#c9c3cf", "#4b4452"],
  cancelled: ["#e3e3e3", "#34383e"],
  pending: ["#f1f3f5", "#20252d"],
  missing: ["#e6e6e6", "#333333"],
};

const CLASS_TEXT: Record<Exclude<PointClass, "value">, string> = {
  infeasible: "✗ does not fit",
  invalid: "✗ invalid",
  failed: "failed",
  cancelled: "cancelled",
  pending: "…",
  missing: "—",
};

/** Low-is-good palette (green -> yellow -> red); reversed when high is good. */
export const PALETTE = ["#1a9850", "#91cf60", "#fee08b", "#fc8d59", "#d73027"];


/** A short mark for a grey cell too narrow for its words (the tooltip says them). */
const CLASS_MARK: Record<Exclude<PointClass, "value">, string> = {
  infeasible: "✗",
  invalid: "✗",
  failed: "!",
  cancelled: "–",
  pending: "…",
  missing: "—",
};

/**
 * Tooltip of a point: its axis values, status and headline numbers with units; `headline`
 * (the heatmap's metric at the cell's precision, `headlineKey`) first when given, and not again.
 */
export function pointTooltipHTML(sweep: Sweep, p: SweepPoint, headline?: string, headlineKey?: string): string {
  const lines = sweep.axes.map((ax) => `${esc(ax.label ?? ax.path)}: <strong>${esc(axisValueText(ax, p.values[ax.path]))}</strong>`);
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  if (headline) lines.unshift(`<strong>${esc(headline)}</strong>`);
  if (p.status === "failed" && p.valid === false) lines.push(`Failed, invalid: ${esc(p.error ?? "")}`);
  else if (p.status !== "done") lines.push(`Status: ${esc(p.status)}${p.error ? ` — ${esc(p.error)}` : ""}`);
  else if (p.valid === false) lines.push(`Invalid: ${esc(p.error ?? "")}`);
  else {
    lines.push(p.fits ? "Fits" : `<strong>Does not fit</strong>${p.violations?.length ? `: ${esc(p.violations.join("; "))}` : ""}`);
    for (const m of METRICS) {
      if (headline && m.key === headlineKey) continue;       // said first, once
      // a 16-bit point's MFU over the 16-bit peak is its MFU: said once
      if (m.key === "mfu_16bit_peak" && p.mfu_peak_precision !== "fp8") continue;
      const v = num(p[m.key]);
      if (v !== null) lines.push(`${m.label}: ${m.short(v)}`);
    }
  }
  return lines.join("<br>");
}

/** The heatmap's tallest (px): a grid of many rows (100 of a 10,000-point sweep) shrinks
 * its rows to fit a 900 px window beside the page's heading, instead of growing 60 px a row. */
export const HEATMAP_MAX_HEIGHT = 720;
/** Px of the chart that are not rows: the axis labels, the axis names and the colour scale. */
const HEATMAP_FRAME = 170;
const ROW_HEIGHT = 60;

/** The heatmap's height (px): 60 px a row and the frame, at most HEATMAP_MAX_HEIGHT. */
export function heatmapHeight(sweep: Sweep): number {
  const rows = sweep.axes[1]?.values.length ?? 1;
  return Math.min(HEATMAP_MAX_HEIGHT, HEATMAP_FRAME + Math.max(1, rows) * ROW_HEIGHT);
}

/** One row's height (px) in a chart `heatmapHeight(sweep)` tall. */
export function heatmapRowHeight(sweep: Sweep): number {
  const rows = Math.max(1, sweep.axes[1]?.values.length ?? 1);
  return (heatmapHeight(sweep) - HEATMAP_FRAME) / rows;
}

/** The chart's width when the page has not said (the widest the page lays a figure out). */
export const HEATMAP_DEFAULT_WIDTH = 1200;
/** Px of the grid's outer margins (left + right) and of the y labels' gap to the cells. */
const GRID_SIDES = 40;
const Y_LABEL_GAP = 8;
/** The widest the row labels may be (px); longer ones end in "…", full in their tooltip. */
export const Y_LABEL_MAX = 180;
const CELL_FONT = 11;
const AXIS_FONT = 12;
/** Width of `text` at `font` px, roughly: digits and lower case are ~0.6 em in the sans-serif. */
export const textPx = (text: string, font: number) => Math.ceil([...text].length * font * 0.6);

export interface HeatmapLayout {
  /** Decimals of the cells and the scale's ends, in the scale's unit. */
  decimals: number;
  /** Width given to the row labels (px). */
  yLabelWidth: number;
  /** One cell's width (px), from the chart's width. */
  cellWidth: number;
  /** One cell's height (px), from the chart's height (`heatmapRowHeight`). */
  cellHeight: number;
  /** Whether every value cell's label fits inside its cell. */
  valueLabels: boolean;
  /** What a grey cell says: its words, a one-character mark, or nothing. */
  classLabels: "words" | "mark" | "none";
}

/**
 * How the heatmap is laid out at `width` px: the precision that tells the values apart,
 * room for the row labels, and whether cell labels fit in their cells (a label wider than
 * its cell would run over its neighbours and the row labels; then only the tooltip has it).
 */
export function heatmapLayout(sweep: Sweep, metric: Metric, width = HEATMAP_DEFAULT_WIDTH): HeatmapLayout {
  const cells = heatmapCells(sweep, metric);
  const scaled = cells.filter((c) => c.cls === "value").map((c) => metric.toScale(c.point[metric.key] as number));
  const decimals = Math.max(metric.minDecimals, distinctDecimals(scaled));
  const [a, b] = sweep.axes;
  const rowTexts = b ? b.values.map((v) => axisValueText(b, v)) : [];
  const yLabelWidth = Math.min(Y_LABEL_MAX, Math.max(0, ...rowTexts.map((t) => textPx(t, AXIS_FONT))));
  const columns = Math.max(1, a.values.length);
  const cellWidth = Math.max(0, (width - GRID_SIDES - yLabelWidth - Y_LABEL_GAP) / columns);
  const cellHeight = heatmapRowHeight(sweep);
  const room = cellWidth - 6;
  const tallEnough = cellHeight >= CELL_FONT + 4;       // a line of cell text fits the row
  const widest = (texts: string[]) => Math.max(0, ...texts.map((t) => textPx(t, CELL_FONT)));
  const valueLabels = tallEnough && widest(scaled.map((v) => metric.cell(v, decimals))) <= room;
  const classes = [...new Set(cells.map((c) => c.cls))].filter((c): c is Exclude<PointClass, "value"> => c !== "value");
  const classLabels = !tallEnough ? "none" : widest(classes.map((c) => CLASS_TEXT[c])) <= room
    ? "words"
    : widest(classes.map((c) => CLASS_MARK[c])) <= room ? "mark" : "none";
  return { decimals, yLabelWidth, cellWidth, cellHeight, valueLabels, classLabels };
}

/** The heatmap's style: the colour scheme and the chart's width in px (labels fit to it). */
export interface HeatmapStyle extends ChartStyle {
  width?: number;
}

/**
 * The grid as a heatmap of `metric`: feasible points coloured on a scale in the metric's
 * unit (green is better), the others in grey with what they are written in the cell.
 * Every cell is labelled with its value and unit, with the decimals that tell neighbouring
 * values apart, when the labels fit in the cells; else the tooltip alone has them.
 */
export function heatmapOption(sweep: Sweep, metric: Metric, style: HeatmapStyle = {}): SweepChartOption {
  const cells = heatmapCells(sweep, metric);
  const layout = heatmapLayout(sweep, metric, style.width || HEATMAP_DEFAULT_WIDTH);
  const { decimals } = layout;
  const [a, b] = sweep.axes;
  const scaledOf = (p: SweepPoint) => metric.toScale(p[metric.key] as number);
  const values = cells.filter((c) => c.cls === "value").map((c) => scaledOf(c.point));
  const lo = values.length ? Math.min(...values) : 0;
  const hi = values.length ? Math.max(...values) : 1;
  const dark = style.dark ? 1 : 0;
  const ink = style.dark ? "#dfe3ea" : "#2d333b";
  const series: HeatmapSeriesOption[] = [
    {
      type: "heatmap",
      name: metric.label,
      // all cells in one render, not 400 a frame (ECharts' progressive rendering from 3,000
      // cells); zrender still paints a heatmap's layer in 15 ms slices (canvas/Painter.js)
      progressive: 0,
      label: {
        show: layout.valueLabels,
        color: "#111",
        fontSize: CELL_FONT,
        formatter: (p: unknown) => {
          const idx = (p as { data: { point: number } }).data.point;
          return metric.cell(scaledOf(sweep.points[idx]), decimals);
        },
      },
      itemStyle: { borderColor: style.dark ? "#13171f" : "#ffffff", borderWidth: cellBorder(layout) },
      emphasis: { itemStyle: { borderColor: style.dark ? "#ffffff" : "#111111" } },
      data: cells.filter((c) => c.cls === "value").map((c) => ({
        value: [c.x, c.y, Math.round(scaledOf(c.point) * 1e6) / 1e6],
        point: c.point.index,
      })),
    },
  ];
  for (const cls of Object.keys(CLASS_TEXT) as Exclude<PointClass, "value">[]) {
    const mine = cells.filter((c) => c.cls === cls);
    if (!mine.length) continue;
    series.push({
      type: "heatmap",
      name: CLASS_LABELS[cls],
      progressive: 0,
      itemStyle: { color: CLASS_COLORS[cls][dark], borderColor: style.dark ? "#13171f" : "#ffffff",
        borderWidth: cellBorder(layout) },
      label: { show: layout.classLabels !== "none", color: style.dark ? "#e6e6e6" : "#333", fontSize: CELL_FONT,
        formatter: () => (layout.classLabels === "words" ? CLASS_TEXT[cls] : CLASS_MARK[cls]) },
      data: mine.map((c) => ({ value: [c.x, c.y, 0], point: c.point.index })),
    });
  }
  const palette = metric.better === "min" ? PALETTE : [...PALETTE].reverse();
  return {
    ...chartFrame(false),
    tooltip: {
      confine: true,
      formatter: (p: unknown) => {
        const idx = (p as { data?: { point?: number } }).data?.point;
        if (typeof idx !== "number") return "";
        const point = sweep.points[idx];
        const v = point[metric.key];
        const headline = pointClass(point, metric) === "value" && typeof v === "number"
          ? `${metric.label}: ${metric.cell(metric.toScale(v), decimals)}` : undefined;
        return pointTooltipHTML(sweep, point, headline, metric.key);
      },
    },
    grid: { left: 20, right: 20, top: 30, bottom: 90, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "category",
      name: axisTitle(a),
      nameLocation: "middle",
      nameGap: 28,
      data: a.values.map((v) => axisValueText(a, v)),
      splitArea: { show: false },
      axisLabel: columnLabels(a.values.map((v) => axisValueText(a, v)), layout.cellWidth, ink),
    },
    yAxis: {
      type: "category",
      name: b ? axisTitle(b) : "",
      nameLocation: "end",
      nameTextStyle: { align: "left", color: ink },
      data: b ? b.values.map((v) => axisValueText(b, v)) : [""],
      axisLabel: { width: Y_LABEL_MAX, overflow: "truncate", fontSize: AXIS_FONT, color: ink,
        interval: rowLabelInterval(layout.cellHeight) },
      // a row label cut short shows in full on hover (ECharts' own tooltip of an axis label)
      tooltip: { show: true },
    },
    visualMap: {
      type: "continuous",
      seriesIndex: 0,
      min: lo,
      max: hi > lo ? hi : lo + 1,
      calculable: false,
      orient: "horizontal",
      left: "center",
      bottom: 0,
      ...scaleEnds(metric, lo, hi, decimals, style.width || HEATMAP_DEFAULT_WIDTH),
      textStyle: { color: ink },
      inRange: { color: palette },
      formatter: (v: unknown) => metric.cell(Number(v), decimals),
    },
    series,
  };
}

/**
 * The column labels: all of them when each fits its cell; cut short with "…" (whole in the
 * tooltip) when cells are at least `MIN_LABELLED_CELL` px; else ECharts leaves out those
 * that would overlap (40 narrow columns), and the tooltip names every column.
 */
export function columnLabels(texts: string[], cellWidth: number, ink: string) {
  const room = cellWidth - 6;
  const widest = Math.max(0, ...texts.map((t) => textPx(t, AXIS_FONT)));
  if (widest <= room) return { interval: 0, color: ink };
  if (cellWidth >= MIN_LABELLED_CELL) return { interval: 0, width: room, overflow: "truncate" as const, color: ink };
  // every (interval + 1)-th label: as many columns as the widest label and a gap span
  // (ECharts' category axisLabel.interval); hideOverlap drops any that still would touch
  const interval = cellWidth > 0 ? Math.max(0, Math.ceil((widest + 8) / cellWidth) - 1) : "auto" as const;
  return { interval, hideOverlap: true, color: ink };
}

/** The row labels' `axisLabel.interval`: every row's label when a line of text fits a
 * row, else every (n + 1)-th, n rows apart enough for a line (100 rows of 5.5 px: 1 in 3). */
export function rowLabelInterval(cellHeight: number): number {
  const line = AXIS_FONT + 4;
  return cellHeight >= line ? 0 : Math.ceil(line / Math.max(cellHeight, 0.01)) - 1;
}

/** The cells' white border (px): 2, 1 for small cells, none when a cell is under 5 px
 * (a border would leave no colour). */
function cellBorder(layout: HeatmapLayout): number {
  const side = Math.min(layout.cellWidth, layout.cellHeight);
  return side < 5 ? 0 : side < 12 ? 1 : 2;
}
const MIN_LABELLED_CELL = 40;

/**
 * The colour scale's end texts and length for a chart `width` px wide: "(better) 4.27 s"
 * and "9.27 s (worse)" beside a bar as long as fits (at most 220 px); without the words
 * when even a short bar would not fit beside them (a phone).
 */
export function scaleEnds(metric: Metric, lo: number, hi: number, decimals: number, width: number) {
  const good = metric.better === "min" ? "better" : "worse";
  const bad = metric.better === "min" ? "worse" : "better";
  // text[0] sits at the high end of the scale, text[1] at the low end.
  let text = [`${metric.cell(hi, decimals)} (${bad})`, `(${good}) ${metric.cell(lo, decimals)}`];
  const bar = (t: string[]) => width - 40 - t.reduce((sum, x) => sum + textPx(x, AXIS_FONT) + 10, 0);
  if (bar(text) < 60) text = [metric.cell(hi, decimals), metric.cell(lo, decimals)];
  return { text, itemHeight: Math.max(30, Math.min(220, bar(text))) };
}

// ------------------------------------------------------------------ Pareto
export const PARETO_X = "Step time (s)";
export const PARETO_Y = "Cost (USD per 1M tokens)";

export interface ParetoGroups {
  front: SweepPoint[];
  feasible: SweepPoint[];
  infeasible: SweepPoint[];
  /** Points with no step time or cost (invalid, failed, cancelled, pending). */
  unplotted: SweepPoint[];
}

export function paretoGroups(sweep: Sweep): ParetoGroups {
  const onFront = new Set(sweep.pareto);
  const out: ParetoGroups = { front: [], feasible: [], infeasible: [], unplotted: [] };
  for (const p of sweep.points) {
    const plottable = p.status === "done" && typeof p.step_time_s === "number" && typeof p.usd_per_million_tokens === "number";
    if (!plottable) out.unplotted.push(p);
    else if (!p.fits) out.infeasible.push(p);
    else if (onFront.has(p.index)) out.front.push(p);
    else out.feasible.push(p);
  }
  out.front.sort((x, y) => (x.step_time_s as number) - (y.step_time_s as number));
  return out;
}

/** A cross, for points that do not fit. */
export const CROSS = "path://M2,0 L10,8 L18,0 L20,2 L12,10 L20,18 L18,20 L10,12 L2,20 L0,18 L8,10 L0,2 Z";

/**
 * A Pareto axis's bounds, step and labels: ticks chosen here (see ./ticks) so the labels
 * carry the decimals the step needs and never repeat; ECharts' own scale without points.
 */
export function paretoScale(axis: NiceAxis | null, unit: (text: string) => string) {
  if (!axis) return { scale: true, axisLabel: { formatter: (v: number) => unit(formatTick(v, 3)) } };
  const { min, max, interval } = axis;
  return { min, max, interval, axisLabel: { formatter: (v: number) => unit(tickText(v, axis)) } };
}

/** Everything of a Pareto chart but its series: frame, legend, a tooltip per point (the
 * point's index in its `data.point`, given to `pointHTML`), grid and `paretoAxes`. */
export function paretoFrame(x: NiceAxis | null, xName: string, xUnit: (text: string) => string,
                            y: NiceAxis | null, yName: string, pointHTML: (idx: number) => string) {
  return {
    ...chartFrame(false),
    legend: { top: 0 },
    tooltip: {
      trigger: "item" as const,
      confine: true,
      formatter: (p: unknown) => {
        const idx = (p as { data?: { point?: number } }).data?.point;
        return typeof idx === "number" ? pointHTML(idx) : "";
      },
    },
    grid: { left: 10, right: 30, top: 50, bottom: 44, outerBoundsMode: "same" as const,
      outerBoundsContain: "all" as const },
    ...paretoAxes(x, xName, xUnit, y, yName),
  };
}

/** The two value axes of a Pareto chart: step time along x (its name under the axis),
 * cost along y, each on `paretoScale`'s ticks with its unit. */
export function paretoAxes(x: NiceAxis | null, xName: string, xUnit: (text: string) => string,
                           y: NiceAxis | null, yName: string) {
  return {
    xAxis: {
      type: "value" as const,
      name: xName,
      nameLocation: "middle" as const,
      nameGap: 28,
      ...paretoScale(x, xUnit),
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    yAxis: {
      type: "value" as const,
      name: yName,
      ...paretoScale(y, (v) => `$${v}`),
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
  };
}

/**
 * Cost per million tokens against step time: the Pareto front joined by a line, other
 * feasible points as circles, points that do not fit as grey crosses (their numbers are
 * what the run would cost if memory allowed it).
 */
export function paretoOption(sweep: Sweep, style: ChartStyle = {}): SweepChartOption {
  const g = paretoGroups(sweep);
  const xy = (p: SweepPoint) => ({ value: [p.step_time_s as number, p.usd_per_million_tokens as number], point: p.index });
  const grey = style.dark ? "#8a919c" : "#8c8c8c";
  const plotted = [...g.front, ...g.feasible, ...g.infeasible];
  const x = niceAxis(plotted.map((p) => p.step_time_s as number));
  // cost from zero when the points are within 10 % of each other: no exaggerated gaps
  const y = ratioAxis(plotted.map((p) => p.usd_per_million_tokens as number));
  const series: (ScatterSeriesOption | LineSeriesOption)[] = [
    { type: "line", name: "Pareto front", data: g.front.map(xy), symbol: "circle", symbolSize: 11,
      lineStyle: { width: 2, color: "#e15759" }, itemStyle: { color: "#e15759" }, z: 3 },
    // progressive 0: every point in one render (as the heatmap)
    { type: "scatter", name: "Feasible", data: g.feasible.map(xy), symbolSize: 9, itemStyle: { color: "#4e79a7" },
      progressive: 0 },
    { type: "scatter", name: "Does not fit", data: g.infeasible.map(xy), symbol: CROSS, symbolSize: 10, progressive: 0,
      itemStyle: { color: grey } },
  ];
  return {
    ...paretoFrame(x, PARETO_X, (v) => `${v} s`, y, PARETO_Y,
      (idx) => pointTooltipHTML(sweep, sweep.points[idx])),
    series,
  };
}
