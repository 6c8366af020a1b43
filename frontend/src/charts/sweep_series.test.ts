import { describe, expect, it } from "vitest";

import { sampleSweep } from "../dashboard/testdata";
import {
  CROSS,
  METRICS,
  PALETTE,
  PARETO_X,
  PARETO_Y,
  heatmapCells,
  heatmapOption,
  metricByKey,
  paretoGroups,
  paretoOption,
  pointClass,
  pointTooltipHTML,
} from "./sweep_series";

const arr = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
type Any = any;

describe("metrics", () => {
  it("falls back to step time for an unknown key (from the URL)", () => {
    expect(metricByKey("usd_per_hour").key).toBe("usd_per_hour");
    expect(metricByKey("nonsense").key).toBe("step_time_s");
    expect(metricByKey(null).key).toBe("step_time_s");
    expect(METRICS.find((m) => m.key === "hbm_total_bytes")!.short(50e9)).toBe("50.0 GB");
  });
});

describe("heatmap", () => {
  const step = metricByKey("step_time_s");

  it("places each point by its axis values and says what it is", () => {
    const sweep = sampleSweep();
    const cells = heatmapCells(sweep, step);
    expect(cells.map((c) => [c.x, c.y, c.cls])).toEqual([
      [0, 0, "infeasible"], [0, 1, "value"], [1, 0, "value"], [1, 1, "value"], [2, 0, "invalid"], [2, 1, "pending"],
    ]);
    expect(pointClass({ index: 9, values: {}, status: "failed" }, step)).toBe("failed");
    expect(pointClass({ index: 9, values: {}, status: "cancelled" }, step)).toBe("cancelled");
  });

  it("colours only feasible points; the others are series of their own, labelled", () => {
    const o = heatmapOption(sampleSweep(), step) as Any;
    const series = arr(o.series) as Any[];
    expect(series[0].data.map((d: Any) => d.value)).toEqual([[0, 1, 8], [1, 0, 6], [1, 1, 4]]);
    expect(series.slice(1).map((s) => s.name)).toEqual(["Does not fit", "Invalid scenario", "Not yet run"]);
    expect(series[1].label.formatter()).toBe("✗ does not fit");
    expect(o.visualMap.seriesIndex).toBe(0);
    expect([o.visualMap.min, o.visualMap.max]).toEqual([4, 8]);
    expect(o.visualMap.inRange.color).toEqual(PALETTE); // low step time is green
    expect(o.visualMap.text).toEqual(["8 s (worse)", "(better) 4 s"]);
    expect(o.xAxis.data).toEqual(["1", "2", "4"]);
    expect(o.xAxis.name).toBe("Number of nodes (cluster.num_nodes)");
    expect(o.yAxis.data).toEqual(["zero2", "zero3"]);
    // every coloured cell is labelled with its unit
    expect(series[0].label.formatter({ data: { point: 1 } })).toBe("8.00 s");
  });

  it("reverses the palette when higher is better and scales fractions to %", () => {
    const o = heatmapOption(sampleSweep(), metricByKey("mfu")) as Any;
    expect(o.visualMap.inRange.color).toEqual([...PALETTE].reverse());
    expect(arr(o.series)[0].data[0].value[2]).toBe(40);
  });

  it("has one row for a one-axis sweep", () => {
    const sweep = sampleSweep();
    sweep.axes = [sweep.axes[0]];
    sweep.points = sweep.points.filter((p) => p.values["strategy.kind"] === "zero3");
    const o = heatmapOption(sweep, step) as Any;
    expect(o.yAxis.data).toEqual([""]);
    expect(arr(o.series)[0].data.map((d: Any) => d.value.slice(0, 2))).toEqual([[0, 0], [1, 0]]);
  });
});

describe("Pareto", () => {
  it("splits points into the front (by step time), other feasible, infeasible and unplotted", () => {
    const g = paretoGroups(sampleSweep());
    expect(g.front.map((p) => p.index)).toEqual([3, 1]);
    expect(g.feasible.map((p) => p.index)).toEqual([2]);
    expect(g.infeasible.map((p) => p.index)).toEqual([0]);
    expect(g.unplotted.map((p) => p.index)).toEqual([4, 5]);
  });

  it("plots cost against step time with units on both axes, infeasible points as crosses", () => {
    const o = paretoOption(sampleSweep()) as Any;
    expect(o.xAxis.name).toBe(PARETO_X);
    expect(o.yAxis.name).toBe(PARETO_Y);
    const [front, feasible, infeasible] = arr(o.series) as Any[];
    expect(front.type).toBe("line");
    expect(front.data.map((d: Any) => d.value)).toEqual([[4, 3], [8, 2]]);
    expect(feasible.data.map((d: Any) => d.value)).toEqual([[6, 3.5]]);
    expect(infeasible.symbol).toBe(CROSS);
    expect(infeasible.data.map((d: Any) => d.value)).toEqual([[5, 1]]);
    expect(o.xAxis.axisLabel.formatter(2.5)).toBe("2.5 s");
  });

  it("explains a point in its tooltip", () => {
    const sweep = sampleSweep();
    const html = pointTooltipHTML(sweep, sweep.points[0]);
    expect(html).toContain("Number of nodes: <strong>1</strong>");
    expect(html).toContain("Does not fit</strong>: HBM per GPU over by 10 GB");
    expect(pointTooltipHTML(sweep, sweep.points[4])).toContain("Invalid: training.global_batch_size");
  });
});
