// Pure builders of the comparison's charts: 2–8 engine reports side by side. Memory per
// tier against capacity, the step-time breakdown, the step timelines on one time axis,
// the checkpoint goodput curves on one chart, and cost. Every number comes from a report
// as it is; only units change (bytes -> GB, seconds -> hours). No DOM, no ECharts runtime.

import type { BarSeriesOption, CustomSeriesOption, LineSeriesOption, ScatterSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  DataZoomComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import { CATEGORY_LABELS, TIERS, categoryBytes, tierUsage, type TierInfo } from "../report";
import { breakdownSegments, BREAKDOWN_LABELS } from "../step";
import { BREAKDOWN_KEYS, CATEGORIES, type Report } from "../types";
import { UNIT_GB, durationTickFormatter, formatBytes, formatNumber, formatSeconds, formatTick, formatTierBytes, tierUnit, type ByteUnit } from "../units";
import { formatUSD } from "../dashboard/format";
import { intervalTick, goodputMarks } from "./goodput_series";
import { CATEGORY_COLORS, toUnit, type ChartStyle } from "./series";
import { ganttLayout, kindColor, kindLabel, renderGanttItem, timeTickFormatter, timelineAxisName, type RenderApi } from "./timeline_series";
import { segmentColor, stepAxisName } from "./step_series";
import { zoomAxis } from "./ticks";
import { escapeHtml as esc } from "../html";
import { categoryStack, chartFrame, panelValueAxis } from "./option_parts";

export type CompareChartOption = ComposeOption<
  | BarSeriesOption
  | LineSeriesOption
  | ScatterSeriesOption
  | CustomSeriesOption
  | GridComponentOption
  | LegendComponentOption
  | TooltipComponentOption
  | DataZoomComponentOption
  | AriaComponentOption
>;

/** One column of the comparison: its label ("1. name") and its report (null until it ran). */
export interface Column {
  label: string;
  report: Report | null;
}

/** A colour per column (Tableau 10), the same in every chart. */
export const COLUMN_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"];
export const columnColor = (i: number) => COLUMN_COLORS[i % COLUMN_COLORS.length];

export const GB_AXIS = UNIT_GB.axis;
export const STEP_AXIS = "Seconds per step (s)";
export const TIME_AXIS = "Time since the micro-batch started (s)";
export const INTERVAL_AXIS = "Checkpoint interval (log scale)";
export const GOODPUT_AXIS = "Goodput (% of wall time)";
export const USD_HOUR_AXIS = "USD per hour (whole cluster)";
export const USD_MTOK_AXIS = "USD per 1M tokens";
export const CAPACITY = "Capacity";

const frameColor = (dark?: boolean) => (dark ? "#d0d4da" : "#3d4451");
const textColor = (dark?: boolean) => (dark ? "#dfe3ea" : "#2d333b");

// ------------------------------------------------------------------ memory per tier
export interface TierColumn {
  present: boolean;
  totalBytes: number;
  capacityBytes: number;
  byCategory: Record<string, number>;
}

export interface TierGroup {
  tier: TierInfo;
  columns: (TierColumn | null)[];
}

/**
 * The tiers any column puts something on (HBM per GPU always), each with every column's
 * usage (null: no report). Tiers present but empty in every column are left to `unusedTiers`.
 */
/**
 * A lane label cut in the middle when longer than `max` characters, so the end that tells
 * lanes apart stays ("NVMe read → NVMe drives (node 0)" and "(node 1)" would both read
 * "NVMe read → NVMe drives (…" cut at the end).
 */
export function middleEllipsis(label: string, max = 24): string {
  if (label.length <= max) return label;
  const tail = Math.ceil((max - 1) / 2);
  return `${label.slice(0, max - 1 - tail)}…${label.slice(label.length - tail)}`;
}

export function tierGroups(columns: Column[]): TierGroup[] {
  return allTiers(columns).filter((g) => g.tier.key === "hbm" || g.columns.some((c) => c && c.totalBytes > 0));
}

/** Tiers some column's node has but no column uses: named under the chart, not drawn. */
export function unusedTiers(columns: Column[]): TierInfo[] {
  const used = new Set(tierGroups(columns).map((g) => g.tier.key));
  return allTiers(columns).filter((g) => !used.has(g.tier.key) && g.columns.some((c) => c?.present)).map((g) => g.tier);
}

function allTiers(columns: Column[]): TierGroup[] {
  const groups: TierGroup[] = [];
  for (const tier of TIERS) {
    const cols = columns.map((c) => {
      const usage = c.report ? tierUsage(c.report, tier) : undefined;
      if (!usage) return null;
      const byCategory: Record<string, number> = {};
      for (const cat of CATEGORIES) byCategory[cat] = categoryBytes(usage, cat);
      return {
        present: usage.present,
        totalBytes: usage.total_bytes,
        capacityBytes: usage.present ? usage.capacity_bytes : 0,
        byCategory,
      };
    });
    if (cols.some((c) => c && (c.present || c.totalBytes > 0))) groups.push({ tier, columns: cols });
  }
  return groups;
}

/** The unit a tier's panel is drawn in: one for all its columns (`tierUnit` of the largest). */
export function groupUnit(g: TierGroup): ByteUnit {
  const most = Math.max(0, ...g.columns.map((c) => (c ? Math.max(c.totalBytes, c.capacityBytes) : 0)));
  return tierUnit(g.tier.key, most);
}

export const TIER_GRID_HEIGHT = 170;
const TIER_GRID_GAP = 90;

/** Height in px the memory chart needs for `tiers` tier panels. */
export function memoryChartHeight(tiers: number): number {
  return 50 + Math.max(1, tiers) * (TIER_GRID_HEIGHT + TIER_GRID_GAP);
}

/** Tooltip of one column in one tier: every category, total and capacity in GB and GiB. */
export function tierColumnTooltip(group: TierGroup, col: number, label: string): string {
  const c = group.columns[col];
  if (!c) return `${esc(label)}: no report`;
  const lines = [`<strong>${esc(label)}</strong>`, esc(group.tier.label)];
  for (const cat of CATEGORIES) lines.push(`${CATEGORY_LABELS[cat]}: ${formatBytes(c.byCategory[cat])}`);
  lines.push(`<strong>Total: ${formatBytes(c.totalBytes)}</strong>`);
  lines.push(c.present ? `Capacity: ${formatBytes(c.capacityBytes)}` : "Not on this node");
  const free = c.capacityBytes - c.totalBytes;
  if (c.present || c.totalBytes > 0) {
    lines.push(free >= 0 ? `Free: ${formatBytes(free)}` : `<strong>Over by ${formatBytes(-free)}</strong>`);
  }
  return lines.join("<br>");
}

/**
 * Memory per tier against capacity: one panel per tier (HBM per GPU, DDR / NVMe / CXL per
 * node, each on its own GB scale), one bar per column stacked by category, and a dashed
 * frame per column at that column's capacity.
 */
export function compareMemoryOption(columns: Column[], style: ChartStyle = {}): CompareChartOption {
  const groups = tierGroups(columns);
  const labels = columns.map((c) => c.label);
  const frame = frameColor(style.dark);
  const over = style.dark ? "#ff8a80" : "#c62828";
  const grid: GridComponentOption[] = groups.map((_, i) => ({
    left: 70, right: 20, top: 50 + i * (TIER_GRID_HEIGHT + TIER_GRID_GAP), height: TIER_GRID_HEIGHT,
  }));
  const xAxis = groups.map((g, i) => ({
    type: "category" as const,
    gridIndex: i,
    data: labels,
    axisTick: { show: false },
    axisLabel: {
      interval: 0,
      width: 150,
      lineHeight: 16,
      overflow: "truncate" as const,
      formatter: (value: string, index: number) => {
        const c = g.columns[index];
        if (!c) return `${value}\nno report`;
        const cap = c.present ? formatTierBytes(c.capacityBytes, g.tier.key) : "none";
        return `${value}\n${formatTierBytes(c.totalBytes, g.tier.key)} / ${cap}`;
      },
      color: textColor(style.dark),
    },
  }));
  const yAxis = groups.map((g, i) => panelValueAxis(i, `${g.tier.label} — ${groupUnit(g).axis}`, groupUnit(g).symbol, true));
  const series: BarSeriesOption[] = [];
  groups.forEach((g, i) => {
    series.push(...categoryStack(`tier-${g.tier.key}`, i,
      (cat) => g.columns.map((c) => (c ? toUnit(c.byCategory[cat], groupUnit(g)) : null)),
      (cat) => ({ barWidth: "45%", itemStyle: { color: CATEGORY_COLORS[cat] } })));
    series.push({
      type: "bar",
      name: CAPACITY,
      xAxisIndex: i,
      yAxisIndex: i,
      barWidth: "45%",
      barGap: "-100%",
      z: 3,
      silent: true,
      itemStyle: { color: "transparent", borderColor: frame, borderWidth: 2, borderType: "dashed" },
      label: {
        show: true,
        position: "top",
        fontSize: 11,
        formatter: (p: unknown) => {
          const c = g.columns[(p as { dataIndex: number }).dataIndex];
          if (!c) return "";
          return c.totalBytes > c.capacityBytes ? `{over|over by ${formatTierBytes(c.totalBytes - c.capacityBytes, g.tier.key)}}` : "";
        },
        rich: { over: { color: over, fontWeight: "bold" } },
      },
      data: g.columns.map((c) => (c ? toUnit(c.capacityBytes, groupUnit(g)) : null)),
    });
  });
  return {
    ...chartFrame(),
    legend: {
      top: 0,
      data: [
        ...CATEGORIES.map((c) => ({ name: CATEGORY_LABELS[c], itemStyle: { color: CATEGORY_COLORS[c] } })),
        { name: CAPACITY, itemStyle: { color: "transparent", borderColor: frame, borderWidth: 2, borderType: "dashed" } },
      ],
    },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const first = (Array.isArray(params) ? params[0] : params) as { axisIndex?: number; dataIndex?: number } | undefined;
        const g = groups[first?.axisIndex ?? 0];
        const col = first?.dataIndex ?? 0;
        return g ? tierColumnTooltip(g, col, labels[col]) : "";
      },
    },
    grid,
    xAxis,
    yAxis,
    series,
  };
}

// ------------------------------------------------------------------ step time
export function stepChartHeight(columns: number): number {
  return 90 + Math.max(1, columns) * 42;
}

/** Horizontal bars, one per column, stacked by the parts of the step time (seconds). */
export function compareStepOption(columns: Column[], style: ChartStyle = {}): CompareChartOption {
  const segs = columns.map((c) => (c.report ? breakdownSegments(c.report) : []));
  const keys = [
    ...BREAKDOWN_KEYS.filter((k) => segs.some((s) => s.some((seg) => seg.key === k))),
    ...[...new Set(segs.flat().map((s) => s.key))].filter((k) => !(BREAKDOWN_KEYS as readonly string[]).includes(k)),
  ];
  const labelOf = (k: string) => BREAKDOWN_LABELS[k as keyof typeof BREAKDOWN_LABELS] ?? k.replace(/_/g, " ");
  const series: BarSeriesOption[] = keys.map((key) => ({
    type: "bar",
    name: labelOf(key),
    stack: "step",
    barWidth: "55%",
    itemStyle: { color: segmentColor(key) },
    data: segs.map((s) => {
      const seg = s.find((x) => x.key === key);
      return seg ? Math.round(seg.seconds * 1e6) / 1e6 : null;
    }),
  }));
  const totals = columns.map((c) => c.report?.step?.time_s ?? null);
  return {
    ...chartFrame(),
    legend: { top: 0, data: keys.map((k) => ({ name: labelOf(k), itemStyle: { color: segmentColor(k) } })) },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const list = (Array.isArray(params) ? params : [params]) as { dataIndex: number }[];
        const i = list[0]?.dataIndex ?? 0;
        const head = `<strong>${esc(columns[i]?.label ?? "")}</strong>`;
        if (!segs[i]?.length) return `${head}<br>no simulated step`;
        return [head, ...segs[i].map((s) => `${esc(s.label)}: ${formatSeconds(s.seconds)}`),
          `<strong>Step: ${formatSeconds(totals[i] ?? 0)}</strong>`].join("<br>");
      },
    },
    grid: { left: 10, right: 40, top: 50, bottom: 40, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "value",
      name: stepAxisName(Math.max(0, ...totals.map((t) => t ?? 0))),
      nameLocation: "middle",
      nameGap: 26,
      axisLabel: { formatter: durationTickFormatter(Math.max(0, ...totals.map((t) => t ?? 0))) },
      splitLine: { lineStyle: { opacity: 0.4 } },
    },
    yAxis: {
      type: "category",
      inverse: true,
      data: columns.map((c, i) => (segs[i].length ? c.label : `${c.label} (no step)`)),
      axisLabel: { color: textColor(style.dark), width: 220, overflow: "truncate" },
      axisTick: { show: false },
    },
    series,
  };
}

// ------------------------------------------------------------------ timelines
const LANE_PX = 22;
const TIMELINE_GAP = 50;

export interface TimelinePanel {
  column: number;
  top: number;
  height: number;
  layout: ReturnType<typeof ganttLayout>;
}

/** Where each column's timeline goes (columns without a timeline are left out). */
export function timelinePanels(columns: Column[]): TimelinePanel[] {
  const panels: TimelinePanel[] = [];
  let top = 40;
  columns.forEach((c, column) => {
    if (!c.report?.timeline?.tasks?.length) return;
    const layout = ganttLayout(c.report);
    const height = Math.max(2, layout.rows.length) * LANE_PX;
    panels.push({ column, top: top + 22, height, layout });
    top += height + 22 + TIMELINE_GAP;
  });
  return panels;
}

export function timelineChartHeight(panels: TimelinePanel[]): number {
  const last = panels[panels.length - 1];
  return last ? last.top + last.height + 80 : 120;
}

/**
 * The columns' step timelines one above the other, every panel on the same time axis
 * (0 to the longest micro-batch), zoomed together by one slider. One series per task kind
 * and panel, named by the kind, so the legend toggles a kind in every panel.
 */
export function compareTimelineOption(columns: Column[], style: ChartStyle = {}): CompareChartOption {
  const panels = timelinePanels(columns);
  const makespan = Math.max(0, ...panels.map((p) => p.layout.makespan));
  // one axis for every panel: 0 to a round number past the longest micro-batch
  const axis = zoomAxis(makespan);
  const secondsTick = timeTickFormatter(axis);
  const kinds = [...new Set(panels.flatMap((p) => p.layout.kinds))];
  const axisIdx = panels.map((_, i) => i);
  const series: CustomSeriesOption[] = [];
  panels.forEach((p, i) => {
    for (const kind of p.layout.kinds) {
      const color = kindColor(kind);
      series.push({
        type: "custom",
        name: kindLabel(kind),
        color,
        xAxisIndex: i,
        yAxisIndex: i,
        renderItem: ((params: Parameters<typeof renderGanttItem>[0], api: RenderApi) =>
          renderGanttItem(params, api, color)) as unknown as CustomSeriesOption["renderItem"],
        encode: { x: [1, 2], y: 0 },
        clip: true,
        tooltip: {
          formatter: (q: unknown) => {
            const d = q as { name?: string; value?: number[] };
            const v = d.value ?? [];
            return `<strong>${esc(columns[p.column].label)}</strong><br>${esc(d.name ?? "")} (${esc(kindLabel(kind))})<br>` +
              `${formatSeconds(v[1] ?? 0)} → ${formatSeconds(v[2] ?? 0)} (${formatSeconds((v[2] ?? 0) - (v[1] ?? 0))})`;
          },
        },
        data: p.layout.items
          .filter((it) => it.kind === kind)
          .map((it) => ({ name: it.name, value: [it.row, it.start, it.end, it.track, p.layout.rows[it.row].tracks, it.index] })),
      });
    }
  });
  const last = panels.length - 1;
  return {
    ...chartFrame(false),
    legend: { top: 0, data: kinds.map((k) => ({ name: kindLabel(k), itemStyle: { color: kindColor(k) } })) },
    tooltip: { trigger: "item", confine: true },
    grid: panels.map((p) => ({ left: 170, right: 30, top: p.top, height: p.height })),
    xAxis: panels.map((_, i) => ({
      type: "value" as const,
      gridIndex: i,
      min: 0,
      max: axis?.max,
      maxInterval: axis?.interval,
      name: i === last ? timelineAxisName(axis, TIME_AXIS) : "",
      nameLocation: "middle" as const,
      nameGap: 26,
      axisLabel: { formatter: secondsTick, hideOverlap: true },
      splitLine: { lineStyle: { opacity: 0.3 } },
    })),
    yAxis: panels.map((p, i) => ({
      type: "category" as const,
      gridIndex: i,
      inverse: true,
      data: p.layout.rows.map((r) => r.label),
      name: `${columns[p.column].label} — micro-batch ${formatSeconds(p.layout.makespan)}`,
      // the axis is inverted (first lane on top): its start is the top of the panel
      nameLocation: "start" as const,
      nameGap: 8,
      nameTextStyle: { align: "left" as const, fontWeight: "bold" as const, color: columnColor(p.column) },
      axisTick: { show: false },
      axisLabel: { fontSize: 10, color: textColor(style.dark), width: 150, overflow: "truncate" as const,
                   formatter: (label: string) => middleEllipsis(label) },
    })),
    dataZoom: panels.length
      ? [
          { type: "slider", xAxisIndex: axisIdx, filterMode: "weakFilter", bottom: 4, height: 20, showDataShadow: false,
            minValueSpan: axis?.minSpan, labelFormatter: secondsTick },
          { type: "inside", xAxisIndex: axisIdx, filterMode: "weakFilter", minValueSpan: axis?.minSpan },
        ]
      : [],
    series,
  };
}

// ------------------------------------------------------------------ checkpoint goodput
/**
 * Goodput against checkpoint interval, one line per column (the engine's curve, hours on a
 * log axis), and each column's chosen interval marked with a diamond.
 */
export function compareGoodputOption(columns: Column[], style: ChartStyle = {}): CompareChartOption {
  const marks = columns.map((c) => (c.report ? goodputMarks(c.report) : null));
  const values = marks.flatMap((m) => (m ? m.points.map((p) => p[1]) : []));
  const lowest = values.length ? Math.min(...values) : 0;
  const yMin = Math.max(0, Math.floor(lowest) - 1);
  const series: (LineSeriesOption | ScatterSeriesOption)[] = [];
  columns.forEach((c, i) => {
    const m = marks[i];
    if (!m || !m.points.length) return;
    series.push({
      type: "line",
      name: c.label,
      showSymbol: false,
      smooth: false,
      lineStyle: { width: 2 },
      itemStyle: { color: columnColor(i) },
      data: m.points,
    });
  });
  series.push({
    type: "scatter",
    name: "Chosen interval",
    symbol: "diamond",
    symbolSize: 13,
    itemStyle: { borderColor: style.dark ? "#13171f" : "#ffffff", borderWidth: 1 },
    data: columns.flatMap((c, i) => {
      const m = marks[i];
      return m && m.chosenH !== null && m.chosenGoodput !== null
        ? [{ value: [m.chosenH, m.chosenGoodput], name: c.label, itemStyle: { color: columnColor(i) } }]
        : [];
    }),
  });
  return {
    ...chartFrame(),
    legend: { top: 0, type: "scroll" },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => {
        const q = p as { seriesName?: string; name?: string; value?: number[] };
        const [hours, pct] = q.value ?? [0, 0];
        const who = q.seriesName === "Chosen interval" ? `${q.name} — chosen interval` : q.seriesName;
        return `<strong>${esc(who ?? "")}</strong><br>Interval: ${formatNumber(hours, 2)} h<br>Goodput: ${formatNumber(pct, 2)}%`;
      },
    },
    grid: { left: 10, right: 30, top: 50, bottom: 44, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "log",
      name: INTERVAL_AXIS,
      nameLocation: "middle",
      nameGap: 28,
      axisLabel: { formatter: intervalTick },
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    yAxis: {
      type: "value",
      name: GOODPUT_AXIS,
      min: yMin,
      max: 100,
      axisLabel: { formatter: (v: number) => `${formatTick(v, 1)}%` },
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    series,
  };
}

// ------------------------------------------------------------------ cost
export interface CostColumn {
  perHour: number | null;
  perMillionTokens: number | null;
}

export function costColumns(columns: Column[]): CostColumn[] {
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  return columns.map((c) => {
    const cost = (c.report as (Report & { cost?: Record<string, unknown> }) | null)?.cost;
    return { perHour: num(cost?.usd_per_hour), perMillionTokens: num(cost?.usd_per_million_tokens) };
  });
}

/** Two bar panels: USD per hour (the whole cluster) and USD per million tokens, a bar per column. */
export function compareCostOption(columns: Column[], style: ChartStyle = {}): CompareChartOption {
  const costs = costColumns(columns);
  const labels = columns.map((c) => c.label);
  const panel = (i: number, name: string, pick: (c: CostColumn) => number | null, unit: (v: number) => string): BarSeriesOption => ({
    type: "bar",
    name,
    xAxisIndex: i,
    yAxisIndex: i,
    barWidth: "55%",
    label: { show: true, position: "top", fontSize: 11, color: textColor(style.dark),
      formatter: (p: unknown) => {
        const v = (p as { value: number | null }).value;
        return typeof v === "number" ? unit(v) : "n/a";
      } },
    data: costs.map((c, k) => ({ value: pick(c), itemStyle: { color: columnColor(k) } })),
  });
  const axisLabel = { interval: 0, width: 110, overflow: "truncate" as const, color: textColor(style.dark) };
  return {
    ...chartFrame(),
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const first = (Array.isArray(params) ? params[0] : params) as { dataIndex?: number };
        const i = first?.dataIndex ?? 0;
        const c = costs[i];
        return [`<strong>${esc(labels[i] ?? "")}</strong>`,
          `Cost per hour: ${c?.perHour !== null && c ? `${formatUSD(c.perHour)}/h` : "n/a"}`,
          `Cost per 1M tokens: ${c?.perMillionTokens !== null && c ? formatUSD(c.perMillionTokens) : "n/a"}`].join("<br>");
      },
    },
    grid: [
      { left: 60, width: "38%", top: 40, bottom: 50 },
      { right: 20, width: "38%", top: 40, bottom: 50 },
    ],
    xAxis: [0, 1].map((i) => ({ type: "category" as const, gridIndex: i, data: labels, axisLabel, axisTick: { show: false } })),
    yAxis: [
      { type: "value" as const, gridIndex: 0, name: USD_HOUR_AXIS, nameTextStyle: { align: "left" as const },
        axisLabel: { formatter: (v: number) => `$${formatTick(v, 2)}` } },
      { type: "value" as const, gridIndex: 1, name: USD_MTOK_AXIS, nameTextStyle: { align: "left" as const },
        axisLabel: { formatter: (v: number) => `$${formatTick(v, 3)}` } },
    ],
    series: [
      panel(0, "Cost per hour", (c) => c.perHour, (v) => `${formatUSD(v)}/h`),
      panel(1, "Cost per 1M tokens", (c) => c.perMillionTokens, (v) => formatUSD(v)),
    ],
  };
}
