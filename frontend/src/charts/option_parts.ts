// Pieces every chart option shares, so each builder says only what is its own: the frame
// (background, animation, ARIA), a memory panel's value axis, and the stacked category bars
// of a tier. Pure: no DOM, no ECharts runtime (types only).

import type { BarSeriesOption } from "echarts/charts";

import { CATEGORY_LABELS } from "../report";
import { CATEGORIES, type Category } from "../types";

/** The start of every option: the page's background shows through, short transitions, and
 *  ECharts' generated ARIA description of the data for screen readers. */
export function chartFrame(animate = true) {
  return {
    backgroundColor: "transparent",
    ...(animate ? { animationDuration: 300 } : { animation: false }),
    aria: { enabled: true },
  };
}

/**
 * The value axis of grid `gridIndex` (one per memory panel), named with its unit, each tick
 * labelled with `unitSymbol` ("GiB", "GB"). The tick text is ECharts' own (the `{value}`
 * template: the tick rounded to the interval's precision, thousands separated), so ticks
 * such as 0.5, 1, 1.5 stay distinct (a whole-number formatter printed "1, 1, 2").
 */
export function panelValueAxis(gridIndex: number, name: string, unitSymbol: string, bold = false) {
  return {
    type: "value" as const,
    gridIndex,
    name,
    nameTextStyle: { align: "left" as const, ...(bold ? { fontWeight: "bold" as const } : {}) },
    axisLabel: { formatter: `{value} ${unitSymbol}` },
    splitLine: { lineStyle: { opacity: 0.4 } },
  };
}

/**
 * One bar series per category, stacked as `stack` on axis pair `axisIndex`: `values(c)` is
 * the category's data (one value per bar), `extra` what a builder adds (bar width, colours).
 */
export function categoryStack(stack: string, axisIndex: number, values: (c: Category) => (number | null)[],
  extra: (c: Category) => Partial<BarSeriesOption>): BarSeriesOption[] {
  return CATEGORIES.map((c) => ({
    type: "bar" as const,
    name: CATEGORY_LABELS[c],
    stack,
    xAxisIndex: axisIndex,
    yAxisIndex: axisIndex,
    barGap: "-100%",
    ...extra(c),
    data: values(c),
  }));
}
