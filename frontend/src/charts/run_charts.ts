// The run page's charts: each chart element (by id) fed to the base wrapper with its pure
// option builder. An element that is not on the page is skipped.

import type { Report } from "../types";
import { bandwidthOption } from "./bandwidth_series";
import { mountChart, type ChartHandle, type OptionBuilder } from "./base";
import { goodputOption } from "./goodput_series";
import { memoryChartOption } from "./series";
import { stepBreakdownOption } from "./step_series";
import { timelineOption } from "./timeline_series";

type Builder = (report: Report, style: { dark: boolean }) => ReturnType<OptionBuilder<Record<string, unknown>>>;

/** Chart element ids and what draws into them. */
export const RUN_CHARTS: Record<string, Builder> = {
  "memory-chart": (r, s) => memoryChartOption(r, s),
  "step-chart": (r, s) => stepBreakdownOption(r, s),
  "timeline-chart": (r, s) => timelineOption(r, s),
  "bandwidth-chart": (r, s) => bandwidthOption(r, s),
  "goodput-chart": (r, s) => goodputOption(r, s),
};

export function mountRunCharts(report: Report, doc: Document = document): ChartHandle[] {
  const handles: ChartHandle[] = [];
  for (const [id, build] of Object.entries(RUN_CHARTS)) {
    const el = doc.getElementById(id);
    if (el) handles.push(mountChart(el, ({ dark }) => build(report, { dark })));
  }
  return handles;
}
