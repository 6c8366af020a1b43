// The dashboard's charts go through the one base wrapper (charts/base.ts); this adds the
// ECharts parts only they use (heatmap, visual map) to what the base registers.

import { BarChart, CustomChart, HeatmapChart, LineChart, ScatterChart } from "echarts/charts";
import {
  AriaComponent,
  DataZoomInsideComponent,
  DataZoomSliderComponent,
  GridComponent,
  LegendComponent,
  LegendScrollComponent,
  TooltipComponent,
  VisualMapContinuousComponent,
} from "echarts/components";
import * as echarts from "echarts/core";
import { CanvasRenderer, SVGRenderer } from "echarts/renderers";

import { mountChart, type ChartHandle } from "./base";

echarts.use([
  BarChart, CustomChart, HeatmapChart, LineChart, ScatterChart,
  AriaComponent, DataZoomInsideComponent, DataZoomSliderComponent, GridComponent, LegendComponent,
  LegendScrollComponent, TooltipComponent, VisualMapContinuousComponent,
  CanvasRenderer, SVGRenderer,
]);

/** Draws `build`'s option into `el` at `height` px (the builders say how tall they need),
 * with `renderer` (mountChart's: "canvas" for charts of thousands of cells or points). */
export function drawChart(el: HTMLElement, height: number, build: (style: { dark: boolean }) => unknown,
                          renderer: "svg" | "canvas" = "svg"): ChartHandle {
  el.style.height = `${Math.round(height)}px`;
  return mountChart(el, build as Parameters<typeof mountChart>[1], renderer);
}
