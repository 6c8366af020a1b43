// Pure builder of a plan's Pareto chart (issue #16): cost per million tokens against step
// time of the front's candidates (as the planner's `pareto_front` in simulation/planner.py
// keeps them), joined by a line, the top-ranked candidate marked, each point's tooltip
// naming its configuration. No DOM, no ECharts runtime (types only); built like the sweep's
// Pareto chart (./sweep_series.ts paretoOption).

import type { LineSeriesOption, ScatterSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import { formatUSD } from "../dashboard/format";
import { escapeHtml as esc } from "../html";
import { formatSeconds } from "../units";
import type { ChartStyle } from "./series";
import { niceAxis, ratioAxis } from "./ticks";
import { paretoFrame } from "./sweep_series";

export type PlanChartOption = ComposeOption<
  ScatterSeriesOption | LineSeriesOption | GridComponentOption | LegendComponentOption | TooltipComponentOption
  | AriaComponentOption
>;

/** One candidate of a plan's result (`result.pareto[i]`, `result.top[i]`), the fields drawn. */
export interface PlanRow {
  index: number;
  choices: Record<string, unknown>;
  data_parallel: number;
  /** Seconds per optimizer step. */
  step_time_s: number;
  /** USD per million trained tokens; null when the node has no price. */
  usd_per_million_tokens: number | null;
}

/** What the plan's page embeds for the chart (`plan-pareto-data`): the front and the rank-1 entry. */
export interface PlanChartData {
  front: PlanRow[];
  top: PlanRow | null;
  /** Why there is no chart, in words (the server's: no feasible candidate and the rejection
   * counts, or a front without costs); empty or absent when there is one. */
  empty_reason?: string;
}

/** The caption of a plan with no chart to draw: the server's reason, else the front's lack of costs. */
export function noChartCaption(data: PlanChartData | null): string {
  if (data?.empty_reason) return data.empty_reason;
  return "No chart: the front's candidates have no cost (the node has no price); see the list.";
}

export const PLAN_COST_AXIS = "Cost ($ per M tokens)";

/** The step-time unit of the axis: ms when every step is under a second, else s. */
export function stepUnit(steps_s: readonly number[]): { unit: "s" | "ms"; per_s: number } {
  const finite = steps_s.filter((v) => Number.isFinite(v));
  return finite.length && Math.max(...finite) < 1 ? { unit: "ms", per_s: 1e3 } : { unit: "s", per_s: 1 };
}

/** The front's candidates that can be drawn (a step time and a cost), fastest first. */
export function planPoints(data: PlanChartData): PlanRow[] {
  return data.front
    .filter((r) => Number.isFinite(r.step_time_s) && typeof r.usd_per_million_tokens === "number"
      && Number.isFinite(r.usd_per_million_tokens))
    .sort((a, b) => a.step_time_s - b.step_time_s || a.index - b.index);
}

/** A candidate's configuration in words: "4 nodes, TP 8, PP 2 (×2), DP 4, zero1, micro-batch 1". */
export function configurationText(r: PlanRow): string {
  const c = r.choices;
  const nodes = Number(c.num_nodes);
  const inter = Number(c.interleave_stages ?? 1);
  return [
    `${nodes} node${nodes === 1 ? "" : "s"}`,
    `TP ${c.tensor_parallel}`,
    `PP ${c.pipeline_parallel}${inter > 1 ? ` (×${inter})` : ""}`,
    `DP ${r.data_parallel}`,
    String(c.strategy),
    `micro-batch ${c.micro_batch_size}`,
    ...(c.recompute !== undefined ? [`recompute ${c.recompute}`] : []),
  ].join(", ");
}

/** A point's tooltip: candidate, rank 1 when it is, the configuration, step time and cost with units. */
export function planTooltipHTML(r: PlanRow, isTop: boolean): string {
  const cost = r.usd_per_million_tokens;
  return [
    `<strong>Candidate ${r.index}</strong>${isTop ? " — top-ranked" : ""}`,
    esc(configurationText(r)),
    `Step time: ${formatSeconds(r.step_time_s)}`,
    `Cost: ${cost === null ? "no price" : `${formatUSD(cost)} per M tokens`}`,
  ].join("<br>");
}

/** The top-ranked candidate's marker: a star. */
export const TOP_SYMBOL = "path://M10,0 L12.9,6.9 L20,7.6 L14.6,12.4 L16.2,19.5 L10,15.8 L3.8,19.5 L5.4,12.4 L0,7.6 L7.1,6.9 Z";

/**
 * Cost per million tokens against step time (s or ms, `stepUnit`) of the plan's Pareto
 * front: one point per candidate that has both (`planPoints`, fastest first) joined by a
 * line, and a star on the top-ranked candidate (when it has a cost).
 */
export function planParetoOption(data: PlanChartData, style: ChartStyle = {}): PlanChartOption {
  const points = planPoints(data);
  const { unit, per_s } = stepUnit(points.map((r) => r.step_time_s));
  const rows = new Map(points.map((r) => [r.index, r]));
  const top = data.top && typeof data.top.usd_per_million_tokens === "number" ? data.top : null;
  if (top) rows.set(top.index, rows.get(top.index) ?? top);
  const xy = (r: PlanRow) => ({ value: [r.step_time_s * per_s, r.usd_per_million_tokens as number], point: r.index });
  const all = top ? [...points, top] : points;
  const x = niceAxis(all.map((r) => r.step_time_s * per_s));
  const y = ratioAxis(all.map((r) => r.usd_per_million_tokens as number));
  const series: (LineSeriesOption | ScatterSeriesOption)[] = [
    { type: "line", name: "Pareto front", data: points.map(xy), symbol: "circle", symbolSize: 10,
      lineStyle: { width: 2, color: "#e15759" }, itemStyle: { color: "#e15759" }, z: 3 },
  ];
  if (top) {
    series.push({ type: "scatter", name: "Top-ranked", data: [xy(top)], symbol: TOP_SYMBOL, symbolSize: 20,
      itemStyle: { color: style.dark ? "#f1c232" : "#d4a017", borderColor: style.dark ? "#ffffff" : "#333333",
        borderWidth: 1 }, z: 4 });
  }
  return {
    ...paretoFrame(x, `Step time (${unit})`, (v) => `${v} ${unit}`, y, PLAN_COST_AXIS, (idx) => {
      const r = rows.get(idx);
      return r ? planTooltipHTML(r, top !== null && r.index === top.index) : "";
    }),
    series,
  } as PlanChartOption;
}
