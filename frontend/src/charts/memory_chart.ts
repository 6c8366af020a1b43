// The memory-per-tier chart: the base wrapper fed with the pure option builder.

import type { Report } from "../types";
import { mountChart, type ChartHandle } from "./base";
import { memoryChartOption } from "./series";

export function mountMemoryChart(el: HTMLElement, report: Report): ChartHandle {
  return mountChart(el, ({ dark }) => memoryChartOption(report, { dark }));
}
