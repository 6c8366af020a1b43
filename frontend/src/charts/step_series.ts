// The step-time breakdown: one horizontal bar, stacked by the parts of the step time, in
// seconds. Pure: only ECharts types are imported.

import type { BarSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import { BREAKDOWN_HELP, breakdownSegments, stepHeadline, type BreakdownSegment } from "../step";
import type { BreakdownKey, Report } from "../types";
import { durationTickFormatter, durationUnit, formatMsSig, formatNumber, formatPercent, formatSeconds } from "../units";
import type { ChartStyle } from "./series";
import { chartFrame } from "./option_parts";

export type StepChartOption = ComposeOption<
  BarSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption | AriaComponentOption
>;

/** Colours per part (Tableau 10), the same hue for a part wherever it is drawn. */
export const BREAKDOWN_COLORS: Record<BreakdownKey, string> = {
  compute: "#4e79a7",
  exposed_comm: "#f28e2b",
  exposed_offload: "#e15759",
  cpu_optimizer: "#59a14f",
  stall: "#b07aa1",
  pipeline_bubble: "#9c755f",
};

export const STEP_AXIS_NAME = "Seconds per step (s)";

/** The step axis's name in the unit its ticks read in (`durationUnit`): "Seconds per step (s)",
 *  "Time per step (years)". */
export function stepAxisName(maxSeconds: number): string {
  const unit = durationUnit(maxSeconds);
  return unit.seconds === 1 ? STEP_AXIS_NAME : `Time per step (${unit.symbol})`;
}

/** A part of a step on its bar: ms below 0.1 s, seconds below a minute, then `formatSeconds`'s
 *  unit ("20.3 years", never "640663255.32 s"). */
function partTime(seconds: number, digits: number): string {
  if (seconds < 0.1) return formatMsSig(seconds);
  return Math.abs(seconds) < 60 ? `${formatNumber(seconds, digits)} s` : formatSeconds(seconds);
}

/** Seconds kept to 6 decimals (1 µs) so options compare exactly. */
export const roundS = (s: number) => Math.round(s * 1e6) / 1e6;

export function segmentColor(key: string): string {
  return BREAKDOWN_COLORS[key as BreakdownKey] ?? "#bab0ac";
}

/** "Exposed communication: 10.38 s (53.7% of the step)". */
export function segmentText(seg: BreakdownSegment): string {
  const time = partTime(seg.seconds, 2);
  return `${seg.label}: ${time} (${formatPercent(seg.fraction)} of the step)`;
}

/**
 * One stacked horizontal bar: every non-zero part of the step time as a segment, in
 * seconds; the segments add up to the step time. Segments wider than 8% are labelled.
 */
export function stepBreakdownOption(report: Report, style: ChartStyle = {}): StepChartOption {
  const segs = breakdownSegments(report);
  const head = stepHeadline(report);
  const category = head.microBatches && head.microBatches > 1
    ? `Step (${head.microBatches} micro-batches)`
    : "Step";
  const labelColor = "#ffffff";
  const series: BarSeriesOption[] = segs.map((seg) => ({
    type: "bar",
    name: seg.label,
    stack: "step",
    barWidth: 38,
    itemStyle: { color: segmentColor(seg.key), borderColor: style.dark ? "#13171f" : "#ffffff", borderWidth: 1 },
    label: {
      show: seg.fraction >= 0.08,
      position: "inside",
      color: labelColor,
      textBorderColor: "rgba(0,0,0,0.55)",
      textBorderWidth: 2,
      // a step of milliseconds (a recommendation model) is labelled in ms
      formatter: () => partTime(seg.seconds, seg.seconds >= 10 ? 1 : 2),
    },
    emphasis: { focus: "series" },
    data: [roundS(seg.seconds)],
  }));
  return {
    ...chartFrame(),
    legend: { top: 0, data: segs.map((s) => ({ name: s.label, itemStyle: { color: segmentColor(s.key) } })) },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => {
        const seg = segs.find((s) => s.label === (p as { seriesName?: string }).seriesName);
        if (!seg) return "";
        const help = BREAKDOWN_HELP[seg.key as BreakdownKey];
        return `<strong>${segmentText(seg)}</strong>${help ? `<br>${help}` : ""}<br>Step time: ${formatSeconds(head.timeS)}`;
      },
    },
    grid: { left: 10, right: 24, top: 44, bottom: 8, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "value",
      name: stepAxisName(head.timeS),
      nameLocation: "middle",
      nameGap: 26,
      min: 0,
      axisLabel: { formatter: durationTickFormatter(head.timeS, 6) },
      splitLine: { lineStyle: { opacity: 0.4 } },
    },
    yAxis: { type: "category", data: [category], axisTick: { show: false } },
    series,
  };
}
