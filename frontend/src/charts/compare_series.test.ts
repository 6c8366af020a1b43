import { describe, expect, it } from "vitest";

import { reportA, reportB } from "../dashboard/testdata";
import {
  CAPACITY,
  GOODPUT_AXIS,
  INTERVAL_AXIS,
  STEP_AXIS,
  TIME_AXIS,
  USD_HOUR_AXIS,
  USD_MTOK_AXIS,
  columnColor,
  compareCostOption,
  compareGoodputOption,
  compareMemoryOption,
  compareStepOption,
  compareTimelineOption,
  costColumns,
  tierColumnTooltip,
  tierGroups,
  timelinePanels,
  unusedTiers,
  type Column,
  middleEllipsis,
} from "./compare_series";

const cols = (): Column[] => [
  { label: "1. A", report: reportA() },
  { label: "2. B", report: reportB() },
  { label: "3. not run", report: null },
];
const arr = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
type Any = any;

describe("memory per tier", () => {
  it("has a panel per tier any column uses, a column with no report left empty", () => {
    const groups = tierGroups(cols());
    expect(groups.map((g) => g.tier.key)).toEqual(["hbm", "ddr"]); // CXL absent, NVMe unused
    expect(unusedTiers(cols()).map((t) => t.key)).toEqual(["nvme"]);
    expect(groups[0].columns[0]?.totalBytes).toBe(60e9);
    expect(groups[0].columns[1]?.byCategory.optimizer).toBe(50e9);
    expect(groups[0].columns[2]).toBeNull();
  });

  it("stacks each column by category in GB, with a capacity frame per column", () => {
    const o = compareMemoryOption(cols()) as Any;
    expect(arr(o.grid)).toHaveLength(2);
    expect(arr(o.yAxis)[0].name).toBe("HBM per GPU — GiB (2³⁰ bytes)");   // GPU memory as nvidia-smi reads it
    const series = arr(o.series) as Any[];
    const optimizer = series.filter((s) => s.name === "Optimizer states" && s.xAxisIndex === 0)[0];
    expect(optimizer.data).toEqual([18.626, 46.566, null]);            // 20e9 and 50e9 B in GiB
    const capacity = series.filter((s) => s.name === CAPACITY && s.xAxisIndex === 0)[0];
    expect(capacity.data).toEqual([74.506, 74.506, null]);             // 80e9 B in GiB
    // the over-capacity column says by how much
    expect(capacity.label.formatter({ dataIndex: 1 })).toBe("{over|over by 9.3 GiB}");
    expect(capacity.label.formatter({ dataIndex: 0 })).toBe("");
    expect(arr(o.xAxis)[0].axisLabel.formatter("1. A", 0)).toBe("1. A\n55.9 GiB / 74.5 GiB");
  });

  it("names GB and GiB in the tooltip", () => {
    const g = tierGroups(cols())[0];
    const html = tierColumnTooltip(g, 1, "2. B");
    expect(html).toContain("Total: 90.0 GB (83.8 GiB)");
    expect(html).toContain("Over by 10.0 GB (9.3 GiB)");
  });
});

describe("step time", () => {
  it("stacks the parts of each column's step in seconds; a column with no step is named so", () => {
    const o = compareStepOption(cols()) as Any;
    expect(o.xAxis.name).toBe(STEP_AXIS);
    const series = arr(o.series) as Any[];
    expect(series.map((s) => s.name)).toEqual(["Compute", "Exposed communication", "Exposed offload I/O"]);
    expect(series[1].data).toEqual([3, 14, null]);
    expect(o.yAxis.data).toEqual(["1. A", "2. B", "3. not run (no step)"]);
  });
});

describe("timelines", () => {
  it("puts every column's timeline on one time axis from 0 to the longest micro-batch", () => {
    const panels = timelinePanels(cols());
    expect(panels.map((p) => p.column)).toEqual([0, 1]);
    expect(panels[1].top).toBeGreaterThan(panels[0].top + panels[0].height);
    const o = compareTimelineOption(cols()) as Any;
    const xs = arr(o.xAxis) as Any[];
    expect(xs.map((x) => [x.min, x.max])).toEqual([[0, 0.4], [0, 0.4]]);
    expect(xs[1].name).toBe(TIME_AXIS);
    expect(arr(o.dataZoom)[0].xAxisIndex).toEqual([0, 1]);
    // one series per kind and panel, each on its panel's axes
    const series = arr(o.series) as Any[];
    expect(series.map((s) => [s.name, s.xAxisIndex])).toEqual([
      ["Compute", 0], ["All-gather", 0], ["Compute", 1], ["Offload transfer", 1],
    ]);
    expect(arr(o.yAxis)[0].name).toContain("1. A");
  });

  it("ends the time axis on a round number and labels it with sensible precision", () => {
    // the longest micro-batch is 36.9719 s: the axis ends at 40 s, not at "36.9719 s"
    const columns = cols();
    columns[1].report!.timeline!.makespan_s = 36.9719;
    columns[1].report!.timeline!.tasks[1].end_s = 36.9719;
    const o = compareTimelineOption(columns) as Any;
    const xs = arr(o.xAxis) as Any[];
    expect(xs.map((x) => [x.min, x.max, x.maxInterval])).toEqual([[0, 40, 10], [0, 40, 10]]);
    const label = xs[0].axisLabel.formatter;
    expect([0, 10, 20, 30, 40].map((v) => label(v))).toEqual(["0 s", "10 s", "20 s", "30 s", "40 s"]);
    expect(label(36.9719)).toBe("36.97 s");      // a zoomed window's edge: 2 decimals at most
    expect(label(12.5)).toBe("12.5 s");
    const [slider, inside] = arr(o.dataZoom) as Any[];
    expect(slider.minValueSpan).toBe(0.04);      // zoom stops at 1000× (ticks 0.01 s apart: 2 decimals)
    expect(inside.minValueSpan).toBe(0.04);
    expect(slider.labelFormatter(17.123456)).toBe("17.12 s");
  });
});

describe("checkpoint goodput", () => {
  it("draws each column's curve in hours and percent, and marks the chosen intervals", () => {
    const o = compareGoodputOption(cols()) as Any;
    expect(o.xAxis.type).toBe("log");
    expect(o.xAxis.name).toBe(INTERVAL_AXIS);
    expect(o.yAxis.name).toBe(GOODPUT_AXIS);
    const series = arr(o.series) as Any[];
    expect(series[0].name).toBe("1. A");
    expect(series[0].data).toEqual([[0.1, 95], [1, 99], [10, 97]]);
    expect(series[0].itemStyle.color).toBe(columnColor(0));
    const chosen = series[series.length - 1];
    expect(chosen.data.map((d: Any) => d.value)).toEqual([[1, 99], [0.1, 95]]);
    expect(o.yAxis.min).toBe(94);
  });
});

describe("cost", () => {
  it("has a panel per hour and per million tokens, n/a for a column without a report", () => {
    expect(costColumns(cols())).toEqual([
      { perHour: 40, perMillionTokens: 2.5 },
      { perHour: 40, perMillionTokens: 5 },
      { perHour: null, perMillionTokens: null },
    ]);
    const o = compareCostOption(cols()) as Any;
    expect(arr(o.yAxis).map((y: Any) => y.name)).toEqual([USD_HOUR_AXIS, USD_MTOK_AXIS]);
    const [hour, mtok] = arr(o.series) as Any[];
    expect(hour.label.formatter({ value: 40 })).toBe("$40.00/h");
    expect(mtok.label.formatter({ value: 2.5 })).toBe("$2.50");
    expect(mtok.label.formatter({ value: null })).toBe("n/a");
  });
});


describe("middleEllipsis (timeline lane labels)", () => {
  it("keeps the end that tells two long lanes apart", () => {
    const a = middleEllipsis("NVMe read → NVMe drives (node 0)");
    const b = middleEllipsis("NVMe read → NVMe drives (node 1)");
    expect(a).not.toBe(b);
    expect(a.length).toBe(24);
    expect(a.endsWith("(node 0)")).toBe(true);
    expect(a).toContain("…");
    expect(middleEllipsis("GPU stream")).toBe("GPU stream");
  });
});
