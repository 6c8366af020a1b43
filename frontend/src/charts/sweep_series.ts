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
import { GB, formatNumber, formatPercent, formatSeconds, formatTick } from "../units";
import type { ChartStyle } from "./series";
import { niceAxis, tickText, type NiceAxis } from "./ticks";
import { escapeHtml as esc } from "../html";

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
  | "goodput";

export interface Metric {
  key: MetricKey;
  label: string;
  /** The unit the heatmap's scale is in. */
  scaleUnit: string;
  better: "min" | "max";
  /** The engine's value in the scale's unit (bytes -> GB, fraction -> %). */
  toScale: (v: number) => number;
  /** A cell's text, with its unit. */
  short: (v: number) => string;
}

export const METRICS: Metric[] = [
  { key: "step_time_s", label: "Step time", scaleUnit: "s", better: "min",
    toScale: (v) => v, short: (v) => formatSeconds(v) },
  { key: "usd_per_million_tokens", label: "Cost per 1M tokens", scaleUnit: "USD per 1M tokens", better: "min",
    toScale: (v) => v, short: (v) => `${formatUSD(v)}/Mtok` },
  { key: "usd_per_hour", label: "Cost per hour", scaleUnit: "USD/h", better: "min",
    toScale: (v) => v, short: (v) => `${formatUSD(v)}/h` },
  { key: "hbm_total_bytes", label: "HBM used per GPU", scaleUnit: "GB (1e9 bytes)", better: "min",
    toScale: (v) => v / GB, short: (v) => `${formatNumber(v / GB, 1)} GB` },
  { key: "tokens_per_s", label: "Throughput", scaleUnit: "tokens/s", better: "max",
    toScale: (v) => v, short: (v) => `${formatNumber(v, 0)} tok/s` },
  { key: "mfu", label: "Model FLOPs utilization", scaleUnit: "%", better: "max",
    toScale: (v) => v * 100, short: (v) => formatPercent(v) },
  { key: "goodput", label: "Checkpoint goodput", scaleUnit: "%", better: "max",
    toScale: (v) => v * 100, short: (v) => formatPercent(v, 2) },
];

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
  if (p.status === "failed") return "failed";
  if (p.status === "cancelled") return "cancelled";
  if (p.valid === false) return "invalid";
  if (p.fits === false) return "infeasible";
  const v = p[metric.key];
  return typeof v === "number" && Number.isFinite(v) ? "value" : "missing";
}

/** A value of an axis as text: 4 -> "4", "nvme" -> "nvme", true -> "true". */
export const valueText = (v: unknown) => (typeof v === "number" ? formatTick(v, 4) : String(v));

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


/** Tooltip of a point: its axis values, status and headline numbers with units. */
export function pointTooltipHTML(sweep: Sweep, p: SweepPoint): string {
  const lines = sweep.axes.map((ax) => `${esc(ax.label ?? ax.path)}: <strong>${esc(valueText(p.values[ax.path]))}</strong>`);
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  if (p.status !== "done") lines.push(`Status: ${esc(p.status)}${p.error ? ` — ${esc(p.error)}` : ""}`);
  else if (p.valid === false) lines.push(`Invalid: ${esc(p.error ?? "")}`);
  else {
    lines.push(p.fits ? "Fits" : `<strong>Does not fit</strong>${p.violations?.length ? `: ${esc(p.violations.join("; "))}` : ""}`);
    for (const m of METRICS) {
      const v = num(p[m.key]);
      if (v !== null) lines.push(`${m.label}: ${m.short(v)}`);
    }
  }
  return lines.join("<br>");
}

export function heatmapHeight(sweep: Sweep): number {
  const rows = sweep.axes[1]?.values.length ?? 1;
  return 150 + Math.max(1, rows) * 46;
}

/**
 * The grid as a heatmap of `metric`: feasible points coloured on a scale in the metric's
 * unit (green is better), the others in grey with what they are written in the cell.
 * Every cell is labelled with its value and unit.
 */
export function heatmapOption(sweep: Sweep, metric: Metric, style: ChartStyle = {}): SweepChartOption {
  const cells = heatmapCells(sweep, metric);
  const [a, b] = sweep.axes;
  const values = cells.filter((c) => c.cls === "value").map((c) => metric.toScale(c.point[metric.key] as number));
  const lo = values.length ? Math.min(...values) : 0;
  const hi = values.length ? Math.max(...values) : 1;
  const dark = style.dark ? 1 : 0;
  const series: HeatmapSeriesOption[] = [
    {
      type: "heatmap",
      name: metric.label,
      label: {
        show: true,
        color: "#111",
        fontSize: 11,
        formatter: (p: unknown) => {
          const idx = (p as { data: { point: number } }).data.point;
          return metric.short(sweep.points[idx][metric.key] as number);
        },
      },
      itemStyle: { borderColor: style.dark ? "#13171f" : "#ffffff", borderWidth: 2 },
      emphasis: { itemStyle: { borderColor: style.dark ? "#ffffff" : "#111111" } },
      data: cells.filter((c) => c.cls === "value").map((c) => ({
        value: [c.x, c.y, Math.round(metric.toScale(c.point[metric.key] as number) * 1e6) / 1e6],
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
      itemStyle: { color: CLASS_COLORS[cls][dark], borderColor: style.dark ? "#13171f" : "#ffffff", borderWidth: 2 },
      label: { show: true, color: style.dark ? "#e6e6e6" : "#333", fontSize: 11, formatter: () => CLASS_TEXT[cls] },
      data: mine.map((c) => ({ value: [c.x, c.y, 0], point: c.point.index })),
    });
  }
  const palette = metric.better === "min" ? PALETTE : [...PALETTE].reverse();
  return {
    backgroundColor: "transparent",
    animation: false,
    aria: { enabled: true },
    tooltip: {
      confine: true,
      formatter: (p: unknown) => {
        const idx = (p as { data?: { point?: number } }).data?.point;
        return typeof idx === "number" ? pointTooltipHTML(sweep, sweep.points[idx]) : "";
      },
    },
    grid: { left: 20, right: 20, top: 30, bottom: 90, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "category",
      name: axisTitle(a),
      nameLocation: "middle",
      nameGap: 28,
      data: a.values.map(valueText),
      splitArea: { show: false },
    },
    yAxis: {
      type: "category",
      name: b ? axisTitle(b) : "",
      nameLocation: "end",
      data: b ? b.values.map(valueText) : [""],
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
      itemHeight: 220,
      // text[0] sits at the high end of the scale, text[1] at the low end.
      text: [`${formatTick(hi, 3)} ${metric.scaleUnit} (${metric.better === "min" ? "worse" : "better"})`,
        `(${metric.better === "min" ? "better" : "worse"}) ${formatTick(lo, 3)} ${metric.scaleUnit}`],
      textStyle: { color: style.dark ? "#dfe3ea" : "#2d333b" },
      inRange: { color: palette },
      formatter: (v: unknown) => formatTick(Number(v), 3),
    },
    series,
  };
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
  const y = niceAxis(plotted.map((p) => p.usd_per_million_tokens as number));
  const series: (ScatterSeriesOption | LineSeriesOption)[] = [
    { type: "line", name: "Pareto front", data: g.front.map(xy), symbol: "circle", symbolSize: 11,
      lineStyle: { width: 2, color: "#e15759" }, itemStyle: { color: "#e15759" }, z: 3 },
    { type: "scatter", name: "Feasible", data: g.feasible.map(xy), symbolSize: 9, itemStyle: { color: "#4e79a7" } },
    { type: "scatter", name: "Does not fit", data: g.infeasible.map(xy), symbol: CROSS, symbolSize: 10,
      itemStyle: { color: grey } },
  ];
  return {
    backgroundColor: "transparent",
    animation: false,
    aria: { enabled: true },
    legend: { top: 0 },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => {
        const idx = (p as { data?: { point?: number } }).data?.point;
        return typeof idx === "number" ? pointTooltipHTML(sweep, sweep.points[idx]) : "";
      },
    },
    grid: { left: 10, right: 30, top: 50, bottom: 44, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "value",
      name: PARETO_X,
      nameLocation: "middle",
      nameGap: 28,
      ...paretoScale(x, (v) => `${v} s`),
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    yAxis: {
      type: "value",
      name: PARETO_Y,
      ...paretoScale(y, (v) => `$${v}`),
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    series,
  };
}
