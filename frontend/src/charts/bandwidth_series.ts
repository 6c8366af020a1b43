// ZeRO-Infinity's efficiency vs offload bandwidth (Rajbhandari et al., SC'21, Sec. 4):
// one curve per kind of state, this node's tiers marked at their per-GPU bandwidth, and
// the target efficiency. Log x axis in GB/s, y in %. Pure: only ECharts types imported.

import type { LineSeriesOption, ScatterSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  MarkLineComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import { STATE_KINDS, type Report, type StateKind } from "../types";
import { GB, formatGBps, formatNumber, formatPercent, formatTick } from "../units";
import type { ChartStyle } from "./series";
import { escapeHtml as esc } from "../html";
import { chartFrame } from "./option_parts";

export type BandwidthChartOption = ComposeOption<
  | LineSeriesOption
  | ScatterSeriesOption
  | GridComponentOption
  | LegendComponentOption
  | TooltipComponentOption
  | MarkLineComponentOption
  | AriaComponentOption
>;

export const STATE_LABELS: Record<StateKind, string> = {
  params_grads: "Parameters and gradients",
  optimizer_states: "Optimizer states",
  activations: "Activation checkpoints",
};

export const STATE_COLORS: Record<StateKind, string> = {
  params_grads: "#4e79a7",
  optimizer_states: "#59a14f",
  activations: "#e15759",
};

export const TIER_LABELS: Record<string, string> = { ddr: "CPU DDR", cxl: "CXL", nvme: "NVMe", pmem: "PMEM" };
export const tierLabel = (t: string) => TIER_LABELS[t] ?? t.toUpperCase();

export const BANDWIDTH_AXIS_NAME = "Offload bandwidth per GPU (GB/s, log scale)";
export const EFFICIENCY_AXIS_NAME = "Training efficiency (%)";
export const TIERS_SERIES_NAME = "This node's tiers (per GPU)";

/** [GB/s, %] kept to 4 decimals so options compare exactly. */
const r4 = (x: number) => Math.round(x * 1e4) / 1e4;

export interface EfficiencyCurve {
  kind: StateKind;
  label: string;
  arithmeticIntensity: number | null;
  bandwidthNeeded: number | null;
  /** [bandwidth in GB/s, efficiency in %] per point, bandwidth ascending. */
  points: [number, number][];
}

/** One curve per kind of state the report analysed, points as [GB/s, %]. */
export function efficiencyCurves(report: Report): EfficiencyCurve[] {
  const ob = report.offload_bandwidth;
  const bw = ob?.bandwidth_bytes_per_s ?? [];
  const out: EfficiencyCurve[] = [];
  for (const kind of STATE_KINDS) {
    const c = ob?.curves?.[kind];
    if (!c) continue;
    const points: [number, number][] = [];
    c.efficiency.forEach((e, i) => {
      if (i < bw.length && bw[i] > 0) points.push([r4(bw[i] / GB), r4(e * 100)]);
    });
    out.push({
      kind,
      label: STATE_LABELS[kind],
      arithmeticIntensity: c.arithmetic_intensity ?? null,
      bandwidthNeeded: c.bandwidth_needed_bytes_per_s ?? null,
      points,
    });
  }
  return out;
}

export interface TierMark {
  tier: string;
  label: string;
  /** Per-GPU bandwidth in GB/s. */
  gbps: number;
  efficiency: Partial<Record<StateKind, number>>;
}

/** This node's offload tiers at their per-GPU bandwidth, slowest first. */
export function tierMarks(report: Report): TierMark[] {
  return (report.offload_bandwidth?.tiers ?? [])
    .filter((t) => t.bytes_per_s > 0)
    .map((t) => ({ tier: t.tier, label: tierLabel(t.tier), gbps: r4(t.bytes_per_s / GB), efficiency: t.efficiency ?? {} }))
    .sort((a, b) => a.gbps - b.gbps);
}

/** A row per kind of state: its intensity, the bandwidth it needs for the target, its efficiency on each tier. */
export interface BandwidthRow {
  label: string;
  intensity: string;
  needed: string;
  perTier: string[];
}

export function bandwidthRows(report: Report): BandwidthRow[] {
  const tiers = tierMarks(report);
  return efficiencyCurves(report).map((c) => ({
    label: c.label,
    intensity: c.arithmeticIntensity !== null ? `${formatNumber(c.arithmeticIntensity, 0)} FLOP/B` : "—",
    needed: c.bandwidthNeeded !== null ? formatGBps(c.bandwidthNeeded) : "—",
    perTier: tiers.map((t) => {
      const e = t.efficiency[c.kind];
      return typeof e === "number" ? formatPercent(e) : "—";
    }),
  }));
}

/** The GB/s axis: 1 GB/s .. 10,000 GB/s (the engine's sweep), widened to include every tier. */
function xRange(curves: EfficiencyCurve[], tiers: TierMark[]): [number, number] {
  const xs = [...curves.flatMap((c) => c.points.map((p) => p[0])), ...tiers.map((t) => t.gbps)].filter((x) => x > 0);
  if (!xs.length) return [1, 10000];
  const lo = 10 ** Math.floor(Math.log10(Math.min(...xs)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...xs)));
  return [lo, hi];
}


/** Axis tooltip: the bandwidth, then each curve's (or tier point's) efficiency there. */
export function bandwidthTooltipHTML(params: unknown[]): string {
  const rows = params as { seriesName?: string; name?: string; value?: number[]; color?: string }[];
  const first = rows.find((r) => Array.isArray(r.value));
  if (!first?.value) return "";
  const lines = [`<strong>${formatGBps(first.value[0] * GB)} per GPU</strong>`];
  for (const r of rows) {
    if (!r.value) continue;
    const tier = r.seriesName === TIERS_SERIES_NAME;
    const what = tier ? `${r.name} (at ${formatGBps(r.value[0] * GB)})` : r.seriesName;
    lines.push(`${esc(what ?? "")}: ${formatNumber(r.value[1], 1)}% efficiency`);
  }
  return lines.join("<br>");
}

export function bandwidthOption(report: Report, style: ChartStyle = {}): BandwidthChartOption {
  const curves = efficiencyCurves(report);
  const tiers = tierMarks(report);
  const target = report.offload_bandwidth?.target_efficiency;
  const [xMin, xMax] = xRange(curves, tiers);
  const ink = style.dark ? "#dfe3ea" : "#2d333b";
  const bg = style.dark ? "#13171f" : "#ffffff";

  const series: (LineSeriesOption | ScatterSeriesOption)[] = curves.map((c) => ({
    type: "line",
    name: c.label,
    showSymbol: false,
    smooth: false,
    lineStyle: { width: 2.5 },
    itemStyle: { color: STATE_COLORS[c.kind] },
    data: c.points,
  }));

  // Where each curve crosses each tier, and a dashed vertical line per tier, labelled
  // along the line so close tiers do not overwrite each other.
  if (tiers.length || typeof target === "number") {
    const markLines: NonNullable<MarkLineComponentOption["data"]> = tiers.map((t) => ({
      name: t.label,
      xAxis: t.gbps,
      lineStyle: { color: ink, type: "dashed", width: 1.5 },
      label: {
        formatter: `${t.label}: ${formatGBps(t.gbps * GB)} per GPU`,
        position: "insideEndTop",
        color: ink,
        backgroundColor: bg,
        padding: [1, 3],
      },
    }));
    if (typeof target === "number") {
      markLines.push({
        name: "Target efficiency",
        yAxis: r4(target * 100),
        lineStyle: { color: style.dark ? "#ffd166" : "#a15c00", type: "dotted", width: 2 },
        label: {
          formatter: `target ${formatPercent(target, 0)}`,
          position: "insideStartTop",
          color: style.dark ? "#ffd166" : "#a15c00",
          backgroundColor: bg,
          padding: [1, 3],
        },
      });
    }
    series.push({
      type: "scatter",
      name: TIERS_SERIES_NAME,
      symbol: "circle",
      symbolSize: 9,
      itemStyle: { color: bg, borderColor: ink, borderWidth: 2 },
      z: 4,
      data: tiers.flatMap((t) =>
        curves
          .filter((c) => typeof t.efficiency[c.kind] === "number")
          .map((c) => ({ name: `${t.label} · ${c.label}`, value: [t.gbps, r4((t.efficiency[c.kind] as number) * 100)] }))),
      markLine: { symbol: ["none", "none"], silent: true, animation: false, data: markLines },
    });
  }

  return {
    ...chartFrame(),
    legend: { top: 0 },
    tooltip: {
      trigger: "axis",
      confine: true,
      formatter: (p: unknown) => bandwidthTooltipHTML(Array.isArray(p) ? p : [p]),
    },
    grid: { left: 10, right: 30, top: 56, bottom: 10, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "log",
      logBase: 10,
      min: xMin,
      max: xMax,
      name: BANDWIDTH_AXIS_NAME,
      nameLocation: "middle",
      nameGap: 28,
      axisLabel: { formatter: (v: number) => `${formatTick(v)} GB/s` },
      splitLine: { show: true, lineStyle: { opacity: 0.35 } },
      minorTick: { show: true },
      minorSplitLine: { show: true, lineStyle: { opacity: 0.12 } },
    },
    yAxis: {
      type: "value",
      min: 0,
      max: 100,
      name: EFFICIENCY_AXIS_NAME,
      nameTextStyle: { align: "left" },
      axisLabel: { formatter: (v: number) => `${formatTick(v)}%` },
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    series,
  };
}
