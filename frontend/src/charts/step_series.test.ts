import { describe, expect, it } from "vitest";
import type { BarSeriesOption } from "echarts/charts";

import { stepReport } from "../testdata/report";
import { BREAKDOWN_COLORS, STEP_AXIS_NAME, segmentText, stepBreakdownOption } from "./step_series";
import { breakdownSegments } from "../step";

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

describe("stepBreakdownOption", () => {
  const option = stepBreakdownOption(stepReport());
  const series = asArray(option.series) as BarSeriesOption[];

  it("stacks one segment per non-zero part on one bar, and the segments sum to the step time", () => {
    expect(series.map((s) => s.name)).toEqual(["Compute", "Exposed communication", "CPU optimizer", "Prefetch stall"]);
    expect(series.every((s) => s.stack === "step")).toBe(true);
    expect(series.map((s) => s.data)).toEqual([[6], [3], [0.5], [0.5]]);
    const total = series.reduce((sum, s) => sum + (s.data as number[])[0], 0);
    expect(total).toBe(10);
  });

  it("has a horizontal bar: seconds on the x axis from 0, the step as the category", () => {
    const x = asArray(option.xAxis)[0] as { type: string; name: string; min: number; axisLabel: { formatter: (v: number) => string } };
    expect(x.type).toBe("value");
    expect(x.name).toBe(STEP_AXIS_NAME);
    expect(STEP_AXIS_NAME).toContain("(s)");
    expect(x.min).toBe(0);
    expect(x.axisLabel.formatter(2.5)).toBe("2.5 s");
    const y = asArray(option.yAxis)[0] as { type: string; data: string[] };
    expect(y).toMatchObject({ type: "category", data: ["Step (2 micro-batches)"] });
  });

  it("labels segments of 8% or more with their seconds, and colours each part", () => {
    expect(series.map((s) => (s.label as { show: boolean }).show)).toEqual([true, true, false, false]);
    const fmt = (s: BarSeriesOption) => (s.label as { formatter: () => string }).formatter();
    expect(fmt(series[0])).toBe("6.00 s");
    expect(series[1].itemStyle?.color).toBe(BREAKDOWN_COLORS.exposed_comm);
  });

  it("says each part's seconds and share in the tooltip", () => {
    const tooltip = asArray(option.tooltip)[0] as { formatter: (p: unknown) => string };
    const html = tooltip.formatter({ seriesName: "Exposed communication" });
    expect(html).toContain("Exposed communication: 3.00 s (30.0% of the step)");
    expect(html).toContain("Step time: 10.00 s");
    expect(segmentText(breakdownSegments(stepReport())[0])).toBe("Compute: 6.00 s (60.0% of the step)");
  });

  it("is empty when the step is not available", () => {
    const r = stepReport();
    r.step = { available: false, reason: "x" };
    expect(asArray(stepBreakdownOption(r).series)).toEqual([]);
  });
});
