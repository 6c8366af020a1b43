// Pure builders of ECharts options from an engine report. No DOM, no ECharts runtime:
// only types are imported, so these run (and are tested) in plain Node.

import type { BarSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import { CATEGORY_LABELS, TIERS, categoryBytes, tierUsage, type TierInfo } from "../report";
import { CATEGORIES, type Category, type Report, type Scope, type TierKey } from "../types";
import { UNIT_GB, formatBytes, formatNumber, formatTierBytes, tierUnit, type ByteUnit } from "../units";
import { categoryStack, chartFrame, panelValueAxis } from "./option_parts";
import { escapeHtml as esc } from "../html";

export type MemoryChartOption = ComposeOption<
  BarSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption | AriaComponentOption
>;

/** Colours per category (Tableau 10): readable on light and dark backgrounds. */
export const CATEGORY_COLORS: Record<Category, string> = {
  params: "#4e79a7",
  grads: "#f28e2b",
  optimizer: "#59a14f",
  activations: "#e15759",
  buffers: "#76b7b2",
};

/** The axis name of a decimal-GB memory axis (HBM's is GiB, a large tier's TB: `barUnit`). */
export const Y_AXIS_NAME = UNIT_GB.axis;
export const CAPACITY_NAME = "Capacity";

export interface TierBar {
  key: TierKey;
  scope: Scope;
  label: string;
  present: boolean;
  totalBytes: number;
  capacityBytes: number;
  byCategory: Record<Category, number>;
}

/**
 * One bar per tier the report holds: HBM per GPU, then DDR, NVMe, CXL per node.
 * A tier the node does not have (present: false) is left out unless something was put
 * on it anyway (then it is drawn with zero capacity, so the overflow shows).
 */
export function tierBars(report: Report): TierBar[] {
  const bars: TierBar[] = [];
  for (const tier of TIERS) {
    const usage = tierUsage(report, tier);
    if (!usage) continue;
    if (!usage.present && !(usage.total_bytes > 0)) continue;
    const byCategory = {} as Record<Category, number>;
    for (const c of CATEGORIES) byCategory[c] = categoryBytes(usage, c);
    bars.push({
      key: tier.key,
      scope: tier.scope,
      label: usage.present ? tier.label : `${tier.label} (not on this node)`,
      present: usage.present,
      totalBytes: usage.total_bytes,
      capacityBytes: usage.present ? usage.capacity_bytes : 0,
      byCategory,
    });
  }
  return bars;
}

/** The tiers a report lists as not present and unused: named under the chart, not drawn. */
export function absentTiers(report: Report): TierInfo[] {
  return TIERS.filter((tier) => {
    const usage = tierUsage(report, tier);
    return usage !== undefined && !usage.present && !(usage.total_bytes > 0);
  });
}


/** Tooltip body for one tier: every category, the total and the capacity in GB and GiB. */
export function tierTooltipHTML(bar: TierBar): string {
  const dot = (color: string) =>
    `<span style="display:inline-block;width:0.6em;height:0.6em;border-radius:50%;` +
    `background:${color};margin-right:0.4em"></span>`;
  const lines = [`<strong>${esc(bar.label)}</strong>`];
  for (const c of CATEGORIES) {
    lines.push(`${dot(CATEGORY_COLORS[c])}${CATEGORY_LABELS[c]}: ${formatBytes(bar.byCategory[c])}`);
  }
  lines.push(`<strong>Total: ${formatBytes(bar.totalBytes)}</strong>`);
  lines.push(`Capacity: ${formatBytes(bar.capacityBytes)}`);
  const free = bar.capacityBytes - bar.totalBytes;
  lines.push(free >= 0 ? `Free: ${formatBytes(free)}` : `<strong>Over by ${formatBytes(-free)}</strong>`);
  return lines.join("<br>");
}

/** The unit a bar is drawn and labelled in (`tierUnit`: HBM in GiB, the others in GB or TB). */
export function barUnit(bar: TierBar): ByteUnit {
  return tierUnit(bar.key, Math.max(bar.totalBytes, bar.capacityBytes));
}

/** The x-axis label under a bar: tier, then "used / capacity" as the tier reads (`formatTierBytes`). */
export function tierAxisLabel(bar: TierBar): string {
  return `${bar.label}\n${formatTierBytes(bar.totalBytes, bar.key)} / ${formatTierBytes(bar.capacityBytes, bar.key)}`;
}

export interface ChartStyle {
  dark?: boolean;
}

/** GB value for the chart, kept to 3 decimals (1 MB) so options compare exactly. */
export function toGB(bytes: number): number {
  return toUnit(bytes, UNIT_GB);
}

/** Bytes in `unit` for a chart, kept to 3 decimals so options compare exactly. */
export function toUnit(bytes: number, unit: ByteUnit): number {
  return Math.round((bytes / unit.bytes) * 1000) / 1000;
}

/**
 * Stacked bars of memory per tier, each tier in its own grid (HBM per GPU is ~85 GB, NVMe
 * per node ~30,000 GB: one shared axis would flatten the small ones). Each bar is stacked
 * by category; a dashed frame behind it, with a label, marks the tier's capacity.
 */
export function memoryChartOption(report: Report, style: ChartStyle = {}): MemoryChartOption {
  const bars = tierBars(report);
  const n = Math.max(bars.length, 1);
  const frame = style.dark ? "#d0d4da" : "#3d4451";
  const overColor = style.dark ? "#ff8a80" : "#c62828";
  const slot = 100 / n;
  // Capacity frames sit above the bars (z 3 > 2) with a transparent fill.

  const grid: GridComponentOption[] = bars.map((_, i) => ({
    left: `${formatNumber(i * slot + 1, 2)}%`,
    width: `${formatNumber(slot - 2, 2)}%`,
    top: 70,
    bottom: 10,
    outerBoundsMode: "same",
    outerBoundsContain: "all",
  }));

  const xAxis = bars.map((bar, i) => ({
    type: "category" as const,
    gridIndex: i,
    data: [bar.key],
    axisTick: { show: false },
    axisLabel: {
      interval: 0,
      lineHeight: 16,
      formatter: () => tierAxisLabel(bar),
      color: bar.totalBytes > bar.capacityBytes ? overColor : undefined,
      fontWeight: bar.totalBytes > bar.capacityBytes ? ("bold" as const) : ("normal" as const),
    },
  }));

  const yAxis = bars.map((bar, i) => panelValueAxis(i, barUnit(bar).axis, barUnit(bar).symbol));

  const series: BarSeriesOption[] = [];
  bars.forEach((bar, i) => {
    series.push(...categoryStack(`tier-${bar.key}`, i, (c) => [toUnit(bar.byCategory[c], barUnit(bar))],
      (c) => ({ barWidth: "55%", itemStyle: { color: CATEGORY_COLORS[c], opacity: bar.present ? 1 : 0.45 } })));
    series.push({
      type: "bar",
      name: CAPACITY_NAME,
      xAxisIndex: i,
      yAxisIndex: i,
      barWidth: "55%",
      barGap: "-100%",
      // Above the stack (transparent fill), so an overflowing bar shows where capacity ends.
      z: 3,
      silent: true,
      itemStyle: {
        color: "transparent",
        borderColor: frame,
        borderWidth: 2,
        borderType: "dashed",
      },
      label: {
        show: true,
        position: "top",
        color: frame,
        backgroundColor: style.dark ? "#13171f" : "#ffffff",
        padding: [1, 4],
        borderRadius: 3,
        formatter: () => `capacity ${formatTierBytes(bar.capacityBytes, bar.key)}`,
      },
      data: [toUnit(bar.capacityBytes, barUnit(bar))],
    });
  });

  return {
    ...chartFrame(),
    legend: {
      top: 0,
      data: [
        ...CATEGORIES.map((c) => ({ name: CATEGORY_LABELS[c], itemStyle: { color: CATEGORY_COLORS[c] } })),
        {
          name: CAPACITY_NAME,
          itemStyle: { color: "transparent", borderColor: frame, borderWidth: 2, borderType: "dashed" },
        },
      ],
    },
    tooltip: {
      trigger: "axis",
      axisPointer: { type: "shadow" },
      confine: true,
      formatter: (params: unknown) => {
        const first = (Array.isArray(params) ? params[0] : params) as { axisValue?: string } | undefined;
        const bar = bars.find((b) => b.key === first?.axisValue);
        return bar ? tierTooltipHTML(bar) : "";
      },
    },
    grid,
    xAxis,
    yAxis,
    series,
  };
}
