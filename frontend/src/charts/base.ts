// The one ECharts wrapper every chart goes through: registers what the charts use
// (tree-shaken from echarts/core), follows the element's size and the light/dark scheme,
// marks the element data-rendered="true" once drawn, keeps the reader's zoom and legend
// selection when it redraws, and disposes cleanly.

import { BarChart, CustomChart, LineChart, ScatterChart } from "echarts/charts";
import {
  AriaComponent,
  DataZoomInsideComponent,
  DataZoomSliderComponent,
  GridComponent,
  LegendComponent,
  MarkAreaComponent,
  MarkLineComponent,
  TooltipComponent,
} from "echarts/components";
import * as echarts from "echarts/core";
import { SVGRenderer } from "echarts/renderers";

import { applyViewState, readViewState } from "./view_state";

echarts.use([
  BarChart, CustomChart, LineChart, ScatterChart,
  AriaComponent, DataZoomInsideComponent, DataZoomSliderComponent, GridComponent, LegendComponent,
  MarkAreaComponent, MarkLineComponent, TooltipComponent,
  SVGRenderer,
]);

/** Dark when the page says so (`<html data-theme="dark">`, as Pico uses), else the OS setting. */
export function prefersDark(): boolean {
  const forced = document.documentElement.dataset.theme;
  if (forced === "dark") return true;
  if (forced === "light") return false;
  return window.matchMedia?.("(prefers-color-scheme: dark)").matches ?? false;
}

export type OptionBuilder<O> = (style: { dark: boolean }) => O;

export interface ChartHandle {
  /** Replace what the chart shows (the builder is re-run on theme changes). */
  update(build: OptionBuilder<echarts.EChartsCoreOption>): void;
  dispose(): void;
  readonly instance: echarts.ECharts | null;
}

/**
 * Draws the option built by `build` into `el`. `el` needs a height (CSS); the chart
 * follows its width with a ResizeObserver and redraws in the other theme when the
 * colour scheme changes, with the dataZoom window and legend selection it had.
 * `renderer`: ECharts' SVG renderer (the default: text a test can read), or its canvas
 * one for charts of thousands of elements (one <canvas>, not a DOM node per cell); the
 * canvas renderer must be registered (echarts.use) by the caller's module.
 */
export function mountChart(
  el: HTMLElement,
  build: OptionBuilder<echarts.EChartsCoreOption>,
  renderer: "svg" | "canvas" = "svg",
): ChartHandle {
  let builder = build;
  let chart: echarts.ECharts | null = null;
  let dark = prefersDark();

  const draw = () => {
    // a redraw in the other scheme keeps what the reader did: the zoom, hidden series
    const kept = chart ? readViewState(chart.getOption()) : null;
    chart?.dispose();
    el.dataset.rendered = "false";
    chart = echarts.init(el, dark ? "dark" : undefined, { renderer });
    chart.on("finished", () => {
      el.dataset.rendered = "true";
    });
    chart.setOption(applyViewState(builder({ dark }), kept), { notMerge: true });
  };

  const onScheme = () => {
    const now = prefersDark();
    if (now !== dark) {
      dark = now;
      draw();
    }
  };

  const media = window.matchMedia?.("(prefers-color-scheme: dark)");
  media?.addEventListener("change", onScheme);
  const themeObserver = new MutationObserver(onScheme);
  themeObserver.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });

  let frame = 0;
  const resizeObserver = new ResizeObserver(() => {
    cancelAnimationFrame(frame);
    frame = requestAnimationFrame(() => chart?.resize());
  });
  resizeObserver.observe(el);

  draw();

  return {
    update(next) {
      builder = next;
      chart?.setOption(builder({ dark }), { notMerge: true });
    },
    dispose() {
      media?.removeEventListener("change", onScheme);
      themeObserver.disconnect();
      resizeObserver.disconnect();
      cancelAnimationFrame(frame);
      chart?.dispose();
      chart = null;
      delete el.dataset.rendered;
    },
    get instance() {
      return chart;
    },
  };
}
