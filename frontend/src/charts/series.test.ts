import { describe, expect, it } from "vitest";
import type { BarSeriesOption } from "echarts/charts";

import { DDR_CAPACITY, sampleReport } from "../testdata/report";
import {
  CAPACITY_NAME,
  CATEGORY_COLORS,
  Y_AXIS_NAME,
  absentTiers,
  memoryChartOption,
  tierAxisLabel,
  tierBars,
  tierTooltipHTML,
  toGB,
} from "./series";

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

describe("tierBars", () => {
  it("makes one bar per present tier, HBM first, and leaves out an absent unused CXL", () => {
    const bars = tierBars(sampleReport());
    expect(bars.map((b) => b.key)).toEqual(["hbm", "ddr", "nvme"]);
    expect(bars.map((b) => b.label)).toEqual(["HBM per GPU", "DDR per node", "NVMe per node"]);
    expect(bars.map((b) => b.scope)).toEqual(["per_gpu", "per_node", "per_node"]);
    expect(absentTiers(sampleReport()).map((t) => t.key)).toEqual(["cxl"]);
  });

  it("splits each tier by the five categories", () => {
    const [hbm, ddr] = tierBars(sampleReport());
    expect(hbm.byCategory).toEqual({
      params: 8e9, grads: 8e9, optimizer: 6e10, activations: 1e10, buffers: 5e9,
    });
    expect(hbm.totalBytes).toBe(9.1e10);
    expect(hbm.capacityBytes).toBe(8.5e10);
    expect(ddr.byCategory.buffers).toBe(2e9);
    expect(ddr.capacityBytes).toBe(DDR_CAPACITY);
  });

  it("sums parts when the per-category totals are missing", () => {
    const r = sampleReport();
    const hbm = r.memory.per_gpu!.hbm!;
    delete hbm.optimizer_bytes;
    delete hbm.params_bytes;
    // optimizer parts: 2e10 master weights + 4e10 Adam moments
    expect(tierBars(r)[0].byCategory.optimizer).toBe(6e10);
    expect(tierBars(r)[0].byCategory.params).toBe(8e9);
  });

  it("draws a missing tier that still got bytes, with zero capacity", () => {
    const r = sampleReport();
    const cxl = r.memory.per_node!.cxl!;
    cxl.optimizer_bytes = 3e9;
    cxl.total_bytes = 3e9;
    const bars = tierBars(r);
    expect(bars.map((b) => b.key)).toEqual(["hbm", "ddr", "nvme", "cxl"]);
    expect(bars[3].label).toBe("CXL per node (not on this node)");
    expect(bars[3].capacityBytes).toBe(0);
    expect(absentTiers(r)).toEqual([]);
  });
});

describe("labels and tooltips", () => {
  it("labels a bar with its use and capacity as the tier reads: memory in GiB or TiB, NVMe in GB or TB", () => {
    // 9.1e10 / 2^30 = 84.75 GiB of 8.5e10 / 2^30 = 79.16 GiB; DDR 2e9 B = 1.9 GiB of 2^41 B = 2.0 TiB
    expect(tierAxisLabel(tierBars(sampleReport())[0])).toBe("HBM per GPU\n84.8 GiB / 79.2 GiB");
    expect(tierAxisLabel(tierBars(sampleReport())[1])).toBe("DDR per node\n1.9 GiB / 2.0 TiB");
  });

  it("gives GB and GiB in the tooltip, and the overflow", () => {
    const html = tierTooltipHTML(tierBars(sampleReport())[0]);
    expect(html).toContain("<strong>HBM per GPU</strong>");
    // 6e10 / 2^30 = 55.88 GiB
    expect(html).toContain("Optimizer states: 60.0 GB (55.9 GiB)");
    // 9.1e10 / 2^30 = 84.75 GiB; 8.5e10 / 2^30 = 79.16 GiB; 6e9 / 2^30 = 5.59 GiB
    expect(html).toContain("Total: 91.0 GB (84.8 GiB)");
    expect(html).toContain("Capacity: 85.0 GB (79.2 GiB)");
    expect(html).toContain("Over by 6.0 GB (5.6 GiB)");
  });

  it("says how much is free when a tier fits", () => {
    // DDR: 2048 GiB = 2199.02 GB, minus 2 GB used = 2197.0 GB = 2.2 TB = 2046.1 GiB = 2.0 TiB
    const html = tierTooltipHTML(tierBars(sampleReport())[1]);
    expect(html).toContain("Free: 2.2 TB (2.0 TiB)");
  });
});

describe("memoryChartOption", () => {
  const option = memoryChartOption(sampleReport());
  const series = asArray(option.series) as BarSeriesOption[];

  it("has one grid, x axis and y axis per tier: HBM in GiB, DDR (2 TiB) in TiB, NVMe (over 1e12 B) in TB", () => {
    expect(asArray(option.grid)).toHaveLength(3);
    const xAxis = asArray(option.xAxis) as { data: string[]; gridIndex: number }[];
    expect(xAxis.map((x) => x.data)).toEqual([["hbm"], ["ddr"], ["nvme"]]);
    expect(xAxis.map((x) => x.gridIndex)).toEqual([0, 1, 2]);
    const yAxis = asArray(option.yAxis) as { name: string }[];
    expect(yAxis.map((y) => y.name)).toEqual(["GiB (2³⁰ bytes)", "TiB (2⁴⁰ bytes)", "TB (10¹² bytes)"]);
    expect(Y_AXIS_NAME).toBe("GB (10⁹ bytes)");
  });

  it("lays the grids side by side across the width", () => {
    const grid = asArray(option.grid) as { left: string; width: string }[];
    // 100 / 3 = 33.33% per slot, 1% margin each side
    expect(grid.map((g) => g.left)).toEqual(["1.00%", "34.33%", "67.67%"]);
    expect(grid.map((g) => g.width)).toEqual(["31.33%", "31.33%", "31.33%"]);
  });

  it("stacks five category series per tier plus one capacity frame", () => {
    expect(series).toHaveLength(3 * 6);
    const hbm = series.filter((s) => s.xAxisIndex === 0);
    expect(hbm.map((s) => s.name)).toEqual([
      "Parameters", "Gradients", "Optimizer states", "Activations", "Buffers", CAPACITY_NAME,
    ]);
    expect(hbm.slice(0, 5).every((s) => s.stack === "tier-hbm")).toBe(true);
    expect(hbm[5].stack).toBeUndefined();
    // GiB: 8e9 / 2^30 = 7.451, 6e10 -> 55.879, 1e10 -> 9.313, 5e9 -> 4.657, 8.5e10 -> 79.162
    expect(hbm.map((s) => s.data)).toEqual([[7.451], [7.451], [55.879], [9.313], [4.657], [79.162]]);
    const stacked = hbm.slice(0, 5).reduce((sum, s) => sum + (s.data as number[])[0], 0);
    expect(stacked).toBeCloseTo(9.1e10 / 2 ** 30, 2);
    expect(hbm[2].itemStyle?.color).toBe(CATEGORY_COLORS.optimizer);
  });

  it("draws the capacity as a dashed frame overlapping the stack", () => {
    const caps = series.filter((s) => s.name === CAPACITY_NAME);
    // HBM 8.5e10 B in GiB; DDR 2^41 B in TiB; NVMe 30.72e12 B in TB
    expect(caps.map((s) => s.data)).toEqual([[79.162], [2], [30.72]]);
    expect(toGB(DDR_CAPACITY)).toBe(2199.023);
    expect(caps[0].barGap).toBe("-100%");
    expect(caps[0].itemStyle?.borderType).toBe("dashed");
    expect(caps[0].itemStyle?.color).toBe("transparent");
    // drawn above the stacked bars, so an overflow shows where the capacity ends
    expect(caps[0].z).toBeGreaterThan(2);
  });

  it("has a legend of the five categories and the capacity", () => {
    const legend = asArray(option.legend)[0] as { data: { name: string }[] };
    expect(legend.data.map((d) => d.name)).toEqual([
      "Parameters", "Gradients", "Optimizer states", "Activations", "Buffers", "Capacity",
    ]);
  });

  it("finds the tier for the tooltip from the axis value", () => {
    const tooltip = asArray(option.tooltip)[0] as { formatter: (p: unknown) => string };
    expect(tooltip.formatter([{ axisValue: "nvme" }])).toContain("<strong>NVMe per node</strong>");
    expect(tooltip.formatter([{ axisValue: "nope" }])).toBe("");
  });

  it("uses a lighter frame in dark mode", () => {
    const dark = asArray(memoryChartOption(sampleReport(), { dark: true }).series) as BarSeriesOption[];
    const light = series;
    expect(dark[5].itemStyle?.borderColor).not.toBe(light[5].itemStyle?.borderColor);
    expect(memoryChartOption(sampleReport()).backgroundColor).toBe("transparent");
  });

  it("is empty but valid for a report without memory", () => {
    const r = sampleReport();
    r.memory = {};
    const empty = memoryChartOption(r);
    expect(asArray(empty.series)).toEqual([]);
    expect(asArray(empty.grid)).toEqual([]);
  });
});
