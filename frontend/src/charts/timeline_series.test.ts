import { describe, expect, it } from "vitest";
import type { CustomSeriesOption } from "echarts/charts";

import { stepReport } from "../testdata/report";
import {
  KIND_COLORS,
  ROW_FILL,
  TIMELINE_AXIS_NAME,
  clipRect,
  ganttLayout,
  renderGanttItem,
  taskTooltipHTML,
  timelineHeight,
  timelineOption,
  timelineSummary,
} from "./timeline_series";

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

describe("ganttLayout", () => {
  const layout = ganttLayout(stepReport());

  it("puts the GPU stream first, then links outwards, unknown lanes last", () => {
    expect(layout.rows.map((r) => r.lane)).toEqual(["gpu", "nic", "ddr", "nvme_read > pcie_h2d", "nvme_write", "mystery_link"]);
    expect(layout.rows.map((r) => r.label)).toEqual([
      "GPU stream", "NIC (node↔node)", "CPU DDR", "NVMe read ⇒ PCIe host→GPU", "NVMe write", "mystery link",
    ]);
  });

  it("maps each task to its lane's row, in the report's order", () => {
    expect(layout.items.map((it) => it.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(layout.items.map((it) => it.row)).toEqual([1, 0, 1, 3, 4, 4, 2, 0, 5]);
    expect(layout.items[1]).toMatchObject({ name: "forward L0", start: 0.04, end: 0.1, kind: "compute", lane: "gpu" });
  });

  it("stacks overlapping tasks of a lane on tracks; back-to-back tasks share one", () => {
    // nic: 0-0.04 then 0.04-0.08 touch but do not overlap: one track
    expect(layout.items.filter((it) => it.lane === "nic").map((it) => it.track)).toEqual([0, 0]);
    // nvme_write: 0.1-0.3 and 0.12-0.25 overlap: two tracks
    expect(layout.items.filter((it) => it.lane === "nvme_write").map((it) => it.track)).toEqual([0, 1]);
    expect(layout.rows.map((r) => r.tracks)).toEqual([1, 1, 1, 1, 2, 1]);
  });

  it("lists the kinds present in legend order, unknown kinds last", () => {
    expect(layout.kinds).toEqual(["compute", "allgather", "offload", "cpu_optimizer", "optimizer", "mystery"]);
    expect(layout.makespan).toBe(0.31);
    expect(layout.truncated).toBe(false);
  });

  it("is empty for a report without a timeline", () => {
    const r = stepReport();
    delete r.timeline;
    expect(ganttLayout(r)).toMatchObject({ rows: [], items: [], kinds: [], makespan: 0 });
  });
});

describe("renderGanttItem", () => {
  // 1000 px per second from x = 100; rows 40 px apart, row 0 centred at y = 60.
  const api = (value: number[]) => ({
    value: (i: number) => value[i],
    coord: ([t, row]: number[]) => [100 + t * 1000, 60 + row * 40],
    size: () => [0, 40],
  });
  const box = { coordSys: { x: 100, y: 40, width: 310, height: 240 } };

  it("draws a task from start to end on its row", () => {
    const el = renderGanttItem(box, api([1, 0.04, 0.1, 0, 1, 1]), "#123456")!;
    const band = 40 * ROW_FILL; // 28.8 px
    expect(el.type).toBe("rect");
    expect(el.shape.x).toBeCloseTo(140);
    expect(el.shape.width).toBeCloseTo(60);
    expect(el.shape.y).toBeCloseTo(100 - band / 2);
    expect(el.shape.height).toBeCloseTo(band);
    expect(el.style.fill).toBe("#123456");
  });

  it("puts the second of two tracks in the lower half of the row", () => {
    const el = renderGanttItem(box, api([4, 0.12, 0.25, 1, 2, 5]), "#000")!;
    const band = 40 * ROW_FILL;
    expect(el.shape.y).toBeCloseTo(220 - band / 2 + band / 2);
    expect(el.shape.height).toBeCloseTo(band / 2 - 1);
  });

  it("clips to the plot and drops what is outside it", () => {
    const el = renderGanttItem(box, api([0, 0.3, 0.5, 0, 1, 0]), "#000")!;
    expect(el.shape.x).toBeCloseTo(400);
    expect(el.shape.width).toBeCloseTo(10); // plot ends at x = 410
    expect(renderGanttItem(box, api([0, 0.5, 0.6, 0, 1, 0]), "#000")).toBeNull();
    expect(clipRect({ x: 0, y: 0, width: 10, height: 10 }, { x: 5, y: 5, width: 10, height: 10 })).toEqual({ x: 5, y: 5, width: 5, height: 5 });
  });

  it("keeps a zero-length task 1 px wide", () => {
    const el = renderGanttItem(box, api([0, 0.2, 0.2, 0, 1, 0]), "#000")!;
    expect(el.shape.width).toBe(1);
  });
});

describe("timelineOption", () => {
  const option = timelineOption(stepReport());
  const series = asArray(option.series) as CustomSeriesOption[];

  it("has one custom series per kind, coloured by kind, values [row, start, end, track, tracks, index]", () => {
    expect(series.map((s) => s.name)).toEqual([
      "Compute", "All-gather", "Offload transfer", "CPU optimizer", "Optimizer step (GPU)", "mystery",
    ]);
    expect(series.every((s) => s.type === "custom")).toBe(true);
    expect(series[2].color).toBe(KIND_COLORS.offload);
    const offload = (series[2].data as { value: number[] }[]).map((d) => d.value);
    expect(offload).toEqual([[3, 0, 0.05, 0, 1, 3], [4, 0.1, 0.3, 0, 2, 4], [4, 0.12, 0.25, 1, 2, 5]]);
    expect(series[0].encode).toEqual({ x: [1, 2], y: 0, tooltip: [1, 2] });
  });

  it("has lanes top to bottom on a category axis and seconds on the x axis", () => {
    const y = asArray(option.yAxis)[0] as { type: string; inverse: boolean; data: string[] };
    expect(y.type).toBe("category");
    expect(y.inverse).toBe(true);
    expect(y.data[0]).toBe("GPU stream");
    const x = asArray(option.xAxis)[0] as { name: string; min: number; axisLabel: { formatter: (v: number) => string } };
    expect(x.name).toBe(TIMELINE_AXIS_NAME);
    expect(x.min).toBe(0);
    expect(x.axisLabel.formatter(0.05)).toBe("0.05 s");
  });

  it("ends the time axis on a tick, not on the makespan's own digits", () => {
    const x = asArray(option.xAxis)[0] as { max: number; maxInterval: number };
    expect([x.max, x.maxInterval]).toEqual([0.35, 0.05]);   // makespan 0.31 s
    const report = stepReport();
    const long = { ...report, timeline: { ...report.timeline!, makespan_s: 36.9719 } };
    const lx = asArray(timelineOption(long).xAxis)[0] as { max: number; axisLabel: { formatter: (v: number) => string } };
    expect(lx.max).toBe(40);
    expect(lx.axisLabel.formatter(40)).toBe("40 s");
    expect(lx.axisLabel.formatter(36.9719)).toBe("36.97 s");
  });

  it("zooms the time axis with a slider and inside the plot", () => {
    const zoom = asArray(option.dataZoom) as { type: string; xAxisIndex: number; filterMode: string }[];
    expect(zoom.map((z) => z.type)).toEqual(["slider", "inside"]);
    expect(zoom.every((z) => z.xAxisIndex === 0 && z.filterMode === "weakFilter")).toBe(true);
  });

  it("gives name, start, end and duration in ms in the tooltip", () => {
    const tooltip = asArray(option.tooltip)[0] as { formatter: (p: unknown) => string };
    const html = tooltip.formatter({ value: [4, 0.12, 0.25, 1, 2, 5] });
    expect(html).toBe(
      "<strong>optimizer states out (2/2)</strong><br>Offload transfer on NVMe write<br>Start: 120.0 ms<br>End: 250.0 ms<br>Duration: 130.0 ms");
    expect(taskTooltipHTML({ index: 0, row: 0, track: 0, start: 0, end: 0.0401088, kind: "allgather", name: "a<b", lane: "nic" }))
      .toContain("<strong>a&#60;b</strong><br>All-gather on NIC (node↔node)<br>Start: 0.0 ms<br>End: 40.1 ms<br>Duration: 40.1 ms");
  });

  it("grows with the number of lanes", () => {
    // 6 lanes: five of one track, one of two (sqrt 2 = 1.41): 6.41 x 36 + 150
    expect(timelineHeight(ganttLayout(stepReport()))).toBe(Math.round((5 + Math.SQRT2) * 36 + 150));
  });
});

describe("timelineSummary", () => {
  it("counts the tasks and lanes", () => {
    // stepReport: 9 tasks on 6 lanes
    expect(timelineSummary(ganttLayout(stepReport()))).toMatch(/^9 tasks on 6 lanes \(the GPU stream and the links\), .+ in all\.$/);
  });

  it("says one lane in the singular and names it (a 1-GPU run: no links)", () => {
    const r = stepReport();
    r.timeline!.tasks = r.timeline!.tasks!.filter((t) => t.lane === "gpu");
    const text = timelineSummary(ganttLayout(r));
    expect(text).toMatch(/ on 1 lane \(GPU stream\), /);
    expect(text).not.toContain("lanes");
  });
});
