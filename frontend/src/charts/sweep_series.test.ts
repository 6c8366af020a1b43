import { describe, expect, it } from "vitest";

import { sampleSweep } from "../dashboard/testdata";
import {
  CROSS,
  METRICS,
  PALETTE,
  PARETO_X,
  PARETO_Y,
  Y_LABEL_MAX,
  heatmapCells,
  heatmapLayout,
  heatmapOption,
  metricByKey,
  paretoGroups,
  paretoOption,
  metricLabel,
  mfuHeading,
  mfuText,
  unplottedSummary,
  pointClass,
  pointTooltipHTML,
  textPx,
  axisValueText,
  columnLabels,
  scaleEnds,
  HEATMAP_MAX_HEIGHT,
  heatmapHeight,
  heatmapRowHeight,
  rowLabelInterval,
} from "./sweep_series";
import type { Sweep, SweepPoint } from "../dashboard/types";
import { axisTicks } from "./ticks";

const arr = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
type Any = any;

describe("metrics", () => {
  it("falls back to step time for an unknown key (from the URL)", () => {
    expect(metricByKey("usd_per_hour").key).toBe("usd_per_hour");
    expect(metricByKey("nonsense").key).toBe("step_time_s");
    expect(metricByKey(null).key).toBe("step_time_s");
    // GPU memory in GiB: 50e9 / 2^30 = 46.6 GiB; the menu names the unit once
    const hbm = METRICS.find((m) => m.key === "hbm_total_bytes")!;
    expect(hbm.short(50e9)).toBe("46.6 GiB");
    expect(metricLabel(hbm)).toBe("HBM used per GPU (GiB)");
  });
});

describe("axis values", () => {
  it("read by the display name the server sent, else as themselves", () => {
    const [nodes, kind] = sampleSweep().axes;
    expect(axisValueText(kind, "zero3")).toBe("ZeRO-3");
    expect(axisValueText(nodes, 4)).toBe("4");
    expect(axisValueText(kind, "zero1")).toBe("zero1");          // not on the axis
    const bare = { path: "strategy.kind", values: ["zero2"] };   // an older payload: no names
    expect(axisValueText(bare, "zero2")).toBe("zero2");
    expect(axisValueText({ path: "x", values: [0.5], value_labels: [null] }, 0.5)).toBe("0.5");
  });

  it("read a null as its meaning and an object by the server's name, never 'null'", () => {
    const fp8 = { path: "training.fp8", values: [null, { recipe: "delayed" }],
      value_labels: ["off", "recipe: delayed"] };
    expect(axisValueText(fp8, null)).toBe("off");
    expect(axisValueText(fp8, { recipe: "delayed" })).toBe("recipe: delayed");   // a copy, as a point holds
    const bare = { path: "training.fp8", values: [null, { recipe: "delayed" }] }; // no names sent
    expect(axisValueText(bare, null)).toBe("none");
    expect(axisValueText(bare, { recipe: "delayed" })).toBe('{"recipe":"delayed"}');
  });

  it("name the point in its tooltip", () => {
    const s = sampleSweep();
    expect(pointTooltipHTML(s, s.points[1])).toContain("Strategy: <strong>ZeRO-3</strong>");
    const withHeadline = pointTooltipHTML(s, s.points[1], "Step time: 8.00 s", "step_time_s");
    expect(withHeadline.match(/Step time/g)).toHaveLength(1);             // not said twice
  });
});

describe("heatmap on a narrow screen", () => {
  const step = metricByKey("step_time_s");

  it("labels every column, cut short before any is left out", () => {
    expect(columnLabels(["1", "2", "4"], 300, "#000")).toEqual({ interval: 0, color: "#000" });
    const cut = columnLabels(["none (GPU HBM)", "CPU DDR", "NVMe"], 80, "#000") as Any;
    expect(cut).toMatchObject({ interval: 0, overflow: "truncate", width: 74 });
    expect(columnLabels(["600", "1200", "1800"], 20, "#000")).toMatchObject({ hideOverlap: true });
  });

  it("keeps the colour scale's ends inside a phone-wide chart", () => {
    const wide = scaleEnds(step, 4.27, 9.27, 2, 1200);
    expect(wide).toEqual({ text: ["9.27 s (worse)", "(better) 4.27 s"], itemHeight: 220 });
    const phone = scaleEnds(step, 4.27, 9.27, 2, 330);
    const used = phone.text.reduce((s, t) => s + textPx(t, 12) + 10, 0) + phone.itemHeight + 40;
    expect(used).toBeLessThanOrEqual(330);
    expect(phone.itemHeight).toBeGreaterThanOrEqual(30);
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
    // a point the engine refused is failed and invalid; one whose chunk failed was never judged
    expect(pointClass({ index: 9, values: {}, status: "failed", valid: false }, step)).toBe("invalid");
    expect(pointClass({ index: 9, values: {}, status: "failed", valid: null }, step)).toBe("failed");
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
    expect(o.visualMap.text).toEqual(["8.00 s (worse)", "(better) 4.00 s"]);
    expect(o.xAxis.data).toEqual(["1", "2", "4"]);
    expect(o.xAxis.name).toBe("Number of nodes (cluster.num_nodes)");
    expect(o.yAxis.data).toEqual(["ZeRO-2", "ZeRO-3"]);   // the display names the server sent
    // every coloured cell is labelled with its unit
    expect(series[0].label.formatter({ data: { point: 1 } })).toBe("8.00 s");
  });

  it("reverses the palette when higher is better and scales fractions to %", () => {
    const o = heatmapOption(sampleSweep(), metricByKey("mfu")) as Any;
    expect(o.visualMap.inRange.color).toEqual([...PALETTE].reverse());
    expect(arr(o.series)[0].data[0].value[2]).toBe(40);
  });

  /** 40 checkpoint intervals × 6 targets, goodput 99.820–99.859% (0.001 points apart). */
  function wideSweep(): Sweep {
    const intervals = Array.from({ length: 40 }, (_, i) => 600 * (i + 1));
    const targets = ["local_nvme", "remote_dram", "cxl_pool", "parallel_fs", "object_store", "gds_nvme"];
    const points: SweepPoint[] = [];
    for (const interval of intervals) {
      for (const target of targets) {
        const i = points.length;
        points.push({ index: i, values: { "checkpoint.interval_s": interval, "checkpoint.target": target },
          status: "done", valid: true, fits: true, step_time_s: 8.9, goodput: 0.9982 + 0.00001 * (i % 40) });
      }
    }
    points[7] = { ...points[7], fits: false };
    return {
      ...sampleSweep(),
      axes: [{ path: "checkpoint.interval_s", label: "Checkpoint interval (s)", values: intervals },
        { path: "checkpoint.target", label: "Checkpoint target", values: targets }],
      points,
    };
  }

  it("hides the cell labels when they are wider than the cells, and keeps the value in the tooltip", () => {
    const goodput = metricByKey("goodput");
    const sweep = wideSweep();
    const o = heatmapOption(sweep, goodput, { width: 1200 }) as Any;
    const [values, notFit] = arr(o.series) as Any[];
    expect(values.label.show).toBe(false);
    expect(notFit.name).toBe("Does not fit");
    // "✗ does not fit" is too wide for a 25 px cell: the short mark, its words in the tooltip
    expect(notFit.label.formatter()).toBe("✗");
    const tip = o.tooltip.formatter({ data: { point: 3 } });
    expect(tip).toContain("<strong>Checkpoint goodput: 99.823%</strong>");
    expect(tip).toContain("Checkpoint target: <strong>parallel_fs</strong>");
    // the same grid, three columns: the labels fit and show
    const narrow = { ...sweep, axes: [{ ...sweep.axes[0], values: sweep.axes[0].values.slice(0, 3) }, sweep.axes[1]],
      points: sweep.points.slice(0, 18) };
    const n = heatmapOption(narrow, goodput, { width: 1200 }) as Any;
    expect(arr(n.series)[0].label.show).toBe(true);
    expect(arr(n.series)[1].label.formatter()).toBe("✗ does not fit");
    // a narrow window: even three columns are too narrow
    expect((arr(heatmapOption(narrow, goodput, { width: 200 }).series)[0] as Any).label.show).toBe(false);
  });

  it("measures the cells from the chart's width", () => {
    const layout = heatmapLayout(wideSweep(), metricByKey("goodput"), 1200);
    expect(layout.cellWidth).toBeGreaterThan(25);
    expect(layout.cellWidth).toBeLessThan(30);
    expect(layout.valueLabels).toBe(false);
    expect(layout.classLabels).toBe("mark");
    expect(layout.yLabelWidth).toBe(textPx("object_store", 12));
    expect(heatmapLayout(wideSweep(), metricByKey("goodput"), 200).classLabels).toBe("none");
  });

  it("gives the row labels room, cutting only very long ones (full text on hover)", () => {
    const o = heatmapOption(wideSweep(), metricByKey("goodput")) as Any;
    expect(o.yAxis.data).toContain("object_store");
    expect(o.yAxis.axisLabel.width).toBe(Y_LABEL_MAX);
    expect(textPx("object_store", o.yAxis.axisLabel.fontSize)).toBeLessThan(Y_LABEL_MAX);
    expect(o.yAxis.axisLabel.overflow).toBe("truncate");
    expect(o.yAxis.tooltip.show).toBe(true);
  });

  it("labels cells and the scale's ends with the decimals that tell neighbouring values apart", () => {
    const goodput = metricByKey("goodput");
    const sweep = wideSweep();
    const o = heatmapOption(sweep, goodput, { width: 8000 }) as Any;
    const values = arr(o.series)[0] as Any;
    expect(values.label.show).toBe(true);
    const texts = values.data.map((d: Any) => values.label.formatter({ data: d }) as string);
    const distinctValues = new Set(values.data.map((d: Any) => d.value[2]));
    expect(distinctValues.size).toBe(40);
    expect(new Set(texts).size).toBe(40);   // two decimals would read 99.82% for 99.820–99.824
    expect(texts[0]).toBe("99.820%");
    expect(o.visualMap.text).toEqual(["99.859% (better)", "(worse) 99.820%"]);
    expect(o.visualMap.formatter(99.85)).toBe("99.850%");
    // dollars keep their cents; a value far from its neighbours needs no more
    const cost = metricByKey("usd_per_hour");
    const c = heatmapOption(sampleSweep(), cost) as Any;
    expect(c.visualMap.text[0]).toMatch(/^\$\d+\.\d{2}\/h \(worse\)$/);
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
    // ticks on a nice step over the points (step 4–8 s, cost $1–3.5), labelled with units
    expect([o.xAxis.min, o.xAxis.max, o.xAxis.interval]).toEqual([3, 9, 1]);
    expect(o.xAxis.axisLabel.formatter(4)).toBe("4 s");
    expect([o.yAxis.min, o.yAxis.max, o.yAxis.interval]).toEqual([0.5, 4, 0.5]);
    expect(o.yAxis.axisLabel.formatter(2.5)).toBe("$2.5");
    expect(o.yAxis.axisLabel.formatter(3)).toBe("$3.0");
    expect(axisTicks(o.yAxis)).toEqual([0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4]);
  });

  it("labels close values with enough digits that adjacent ticks differ", () => {
    // step times 0.1002–0.1009 s and costs $1.2301–$1.2318: three decimals read "0.1 s, 0.1 s"
    const sweep = sampleSweep();
    const near = [[0.1002, 1.2318], [0.1009, 1.2301], [0.1005, 1.231], [0.1007, 1.2304]];
    sweep.points.slice(0, 4).forEach((p, i) => {
      [p.step_time_s, p.usd_per_million_tokens] = near[i];
    });
    const o = paretoOption(sweep) as Any;
    for (const [axis, unit] of [[o.xAxis, / s$/], [o.yAxis, /^\$/]] as [Any, RegExp][]) {
      const labels = axisTicks(axis).map((v) => axis.axisLabel.formatter(v) as string);
      expect(labels.length).toBeGreaterThanOrEqual(3);
      expect(new Set(labels).size).toBe(labels.length);
      labels.forEach((l) => expect(l).toMatch(unit));
    }
    expect(axisTicks(o.xAxis).map((v) => o.xAxis.axisLabel.formatter(v))).toEqual(
      ["0.1000 s", "0.1002 s", "0.1004 s", "0.1006 s", "0.1008 s", "0.1010 s"]);
    // every point lies inside the axes
    for (const [x, y] of near) {
      expect(x).toBeGreaterThanOrEqual(o.xAxis.min);
      expect(x).toBeLessThanOrEqual(o.xAxis.max);
      expect(y).toBeGreaterThanOrEqual(o.yAxis.min);
      expect(y).toBeLessThanOrEqual(o.yAxis.max);
    }
  });

  it("counts the points it leaves out in words", () => {
    const sweep = sampleSweep();
    const bad = (i: number) => ({ ...sweep.points[0], index: i, valid: false, fits: undefined, step_time_s: null });
    const points = [bad(10), bad(11), bad(12), { ...sweep.points[0], index: 13, status: "failed" as const }];
    expect(unplottedSummary(points, METRICS[0])).toBe("3 invalid points, 1 failed point");
    expect(unplottedSummary([], METRICS[0])).toBe("");
  });

  it("starts the cost axis at $0 when the costs differ by a fraction of a percent", () => {
    // $1.4940-$1.4970 (0.2 % apart): a tight axis would stretch that over the whole plot
    const sweep = sampleSweep();
    const close = [[5, 1.494], [4, 1.497], [8, 1.495], [6, 1.4965]];
    sweep.points.slice(0, 4).forEach((p, i) => {
      [p.step_time_s, p.usd_per_million_tokens] = close[i];
    });
    const o = paretoOption(sweep) as Any;
    expect(o.yAxis.min).toBe(0);
    expect(o.yAxis.max).toBeGreaterThanOrEqual(1.497);
    expect(o.yAxis.max).toBeLessThanOrEqual(2);
  });

  it("leaves the scale to ECharts when no point has a step time and a cost", () => {
    const sweep = sampleSweep();
    sweep.points = sweep.points.filter((p) => p.status !== "done");
    const o = paretoOption(sweep) as Any;
    expect(o.xAxis.scale).toBe(true);
    expect(o.xAxis.min).toBeUndefined();
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

describe("a heatmap at the planner's scale (100 x 100 points)", () => {
  function bigSweep(): Sweep {
    const xs = Array.from({ length: 100 }, (_, i) => 600 * (i + 1));
    const ys = Array.from({ length: 100 }, (_, i) => i + 1);
    const points: SweepPoint[] = [];
    for (const x of xs) for (const y of ys) {
      points.push({ index: points.length, values: { "checkpoint.interval_s": x, "strategy.prefetch_depth": y },
        status: "done", valid: true, fits: true, step_time_s: 4 + points.length / 1e4 });
    }
    return { ...sampleSweep(), axes: [{ path: "checkpoint.interval_s", values: xs },
      { path: "strategy.prefetch_depth", values: ys }], points, total_points: points.length };
  }

  it("fits a window: rows shrink instead of growing the chart 60 px each", () => {
    // before: 170 + 100 x 60 = 6,170 px tall
    const s = bigSweep();
    expect(heatmapHeight(s)).toBe(HEATMAP_MAX_HEIGHT);
    expect(HEATMAP_MAX_HEIGHT).toBeLessThan(900);
    expect(heatmapRowHeight(s)).toBeCloseTo((720 - 170) / 100, 6);           // 5.5 px a row
    expect(heatmapHeight(sampleSweep())).toBe(170 + sampleSweep().axes[1].values.length * 60);
  });

  it("thins the axis labels with interval and draws no cell text in 5.5 px rows", () => {
    const s = bigSweep();
    // a 16 px line (12 px font + 4) over 5.5 px rows: every third row label (interval 2)
    expect(rowLabelInterval(5.5)).toBe(2);
    expect(rowLabelInterval(60)).toBe(0);
    const option = heatmapOption(s, METRICS[0], { width: 1200 }) as Any;
    expect(option.yAxis.axisLabel.interval).toBe(2);
    // columns: (1200 - 40 sides - 22 for the row label "100" (3 x 12 x 0.6 = 21.6, rounded up)
    // - 8 gap) / 100 = 11.30 px; the widest column label "60,000" is textPx
    // ceil(6 x 12 x 0.6) = 44 px, + 8 px gap = 52 px: 52 / 11.3 = 4.6, 5 columns a label, interval 4
    const layout = heatmapLayout(s, METRICS[0], 1200);
    expect(layout.cellWidth).toBeCloseTo(11.3, 6);
    expect(option.xAxis.axisLabel.interval).toBe(4);
    expect(layout.valueLabels).toBe(false);
    expect(arr(option.series).every((x: Any) => x.label.show === false)).toBe(true);
    expect(arr(option.series)[0].itemStyle.borderWidth).toBe(1);
    // laid out in one render, not 400 cells a frame
    expect(arr(option.series).every((x: Any) => x.progressive === 0)).toBe(true);
    expect(arr(paretoOption(s).series).filter((x: Any) => x.type === "scatter")
      .every((x: Any) => x.progressive === 0)).toBe(true);
  });
});

describe("MFU of FP8 and 16-bit points", () => {
  // an FP8 point's MFU is over the FP8 peak (1,979 TFLOP/s on an H100, twice the 989.5 of
  // BF16), so its 30 % is 60 % over the 16-bit peak: the figure that compares with a 16-bit
  // point's 45 %
  const bf16 = { index: 0, values: {}, status: "done", valid: true, fits: true, mfu: 0.45,
    mfu_peak_precision: "16-bit", mfu_16bit_peak: 0.45 } as SweepPoint;
  const fp8 = { index: 1, values: {}, status: "done", valid: true, fits: true, mfu: 0.3,
    mfu_peak_precision: "fp8", mfu_16bit_peak: 0.6 } as SweepPoint;

  it("shows an FP8 point over the 16-bit peak first, its FP8 figure after", () => {
    expect(mfuText(bf16)).toBe("45.0%");
    expect(mfuText(fp8)).toBe("60.0% (FP8: 30.0% of its FP8 peak)");
    expect(mfuText({ ...fp8, mfu: null })).toBe("—");
    // an older stored point without the new fields keeps its MFU
    expect(mfuText({ index: 2, values: {}, status: "done", mfu: 0.3, mfu_peak_precision: "fp8" } as SweepPoint))
      .toBe("30.0%");
  });

  it("names the peak in the heading once a point ran FP8", () => {
    expect(mfuHeading([bf16])).toBe("MFU");
    expect(mfuHeading([bf16, fp8])).toBe("MFU (16-bit peak)");
  });

  it("offers the comparable MFU as a heatmap metric and says it once in a 16-bit tooltip", () => {
    const m = metricByKey("mfu_16bit_peak");
    expect(m.key).toBe("mfu_16bit_peak");
    expect(metricLabel(m)).toBe("MFU over the 16-bit peak (%)");
    const s = sampleSweep();
    const one = (p: SweepPoint) => pointTooltipHTML(s, p).split("<br>").filter((l) => l.startsWith("MFU over")).length;
    expect(one(bf16)).toBe(0);
    expect(one(fp8)).toBe(1);
  });
});
