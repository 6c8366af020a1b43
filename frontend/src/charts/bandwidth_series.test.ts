import { describe, expect, it } from "vitest";
import type { LineSeriesOption, ScatterSeriesOption } from "echarts/charts";

import { stepReport } from "../testdata/report";
import {
  BANDWIDTH_AXIS_NAME,
  EFFICIENCY_AXIS_NAME,
  TIERS_SERIES_NAME,
  bandwidthOption,
  bandwidthRows,
  bandwidthTooltipHTML,
  efficiencyCurves,
  tierMarks,
} from "./bandwidth_series";

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

describe("efficiencyCurves", () => {
  it("gives one curve per kind of state, points as [GB/s, %]", () => {
    const curves = efficiencyCurves(stepReport());
    expect(curves.map((c) => c.label)).toEqual(["Parameters and gradients", "Optimizer states", "Activation checkpoints"]);
    // 1e9 B/s = 1 GB/s ... 1e12 B/s = 1,000 GB/s; 0.01 = 1%
    expect(curves[0].points).toEqual([[1, 1], [10, 10], [100, 50], [1000, 90]]);
    expect(curves[2].points[3]).toEqual([1000, 99.7]);
  });

  it("marks this node's tiers at their per-GPU bandwidth, slowest first", () => {
    const tiers = tierMarks(stepReport());
    expect(tiers.map((t) => [t.label, t.gbps])).toEqual([["NVMe", 6.9], ["CPU DDR", 76.8]]);
  });

  it("tabulates the bandwidth needed for the target and the efficiency per tier", () => {
    expect(bandwidthRows(stepReport())[0]).toEqual({
      label: "Parameters and gradients", intensity: "4,096 FLOP/B", needed: "1,100.0 GB/s", perTier: ["4.9%", "36.6%"],
    });
  });
});

describe("bandwidthOption", () => {
  const option = bandwidthOption(stepReport());
  const series = asArray(option.series) as (LineSeriesOption | ScatterSeriesOption)[];

  it("has a log x axis in GB/s spanning the sweep and a y axis in %", () => {
    const x = asArray(option.xAxis)[0] as { type: string; min: number; max: number; name: string; axisLabel: { formatter: (v: number) => string } };
    expect(x).toMatchObject({ type: "log", min: 1, max: 1000, name: BANDWIDTH_AXIS_NAME });
    expect(x.axisLabel.formatter(10)).toBe("10 GB/s");
    const y = asArray(option.yAxis)[0] as { min: number; max: number; name: string; axisLabel: { formatter: (v: number) => string } };
    expect(y).toMatchObject({ min: 0, max: 100, name: EFFICIENCY_AXIS_NAME });
    expect(y.axisLabel.formatter(90)).toBe("90%");
  });

  it("draws three curves and the tiers' crossings", () => {
    expect(series.map((s) => s.name)).toEqual([
      "Parameters and gradients", "Optimizer states", "Activation checkpoints", TIERS_SERIES_NAME,
    ]);
    const tiers = series[3] as ScatterSeriesOption;
    const values = (tiers.data as { value: number[] }[]).map((d) => d.value);
    // NVMe x 3 states, then DDR x 3
    expect(values).toEqual([[6.9, 4.9], [6.9, 1.28], [6.9, 71.4], [76.8, 36.6], [76.8, 12.6], [76.8, 96.5]]);
  });

  it("marks each tier with a labelled vertical line and the target with a horizontal one", () => {
    const lines = (series[3] as ScatterSeriesOption).markLine!.data as { xAxis?: number; yAxis?: number; label: { formatter: string } }[];
    expect(lines.map((l) => l.xAxis ?? null)).toEqual([6.9, 76.8, null]);
    expect(lines[0].label.formatter).toBe("NVMe: 6.9 GB/s per GPU");
    expect(lines[1].label.formatter).toBe("CPU DDR: 76.8 GB/s per GPU");
    expect(lines[2].yAxis).toBe(90);
    expect(lines[2].label.formatter).toBe("target 90%");
  });

  it("says the bandwidth and each curve's efficiency in the tooltip", () => {
    const html = bandwidthTooltipHTML([
      { seriesName: "Optimizer states", value: [10, 2] },
      { seriesName: TIERS_SERIES_NAME, name: "NVMe · Optimizer states", value: [6.9, 1.28] },
    ]);
    expect(html).toBe("<strong>10.0 GB/s per GPU</strong><br>Optimizer states: 2.0% efficiency<br>NVMe · Optimizer states (at 6.9 GB/s): 1.3% efficiency");
  });

  it("has no tier series without tiers or target", () => {
    const r = stepReport();
    r.offload_bandwidth!.tiers = [];
    delete r.offload_bandwidth!.target_efficiency;
    expect(asArray(bandwidthOption(r).series)).toHaveLength(3);
  });
});
