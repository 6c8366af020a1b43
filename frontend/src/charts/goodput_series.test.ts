import { describe, expect, it } from "vitest";
import type { LineSeriesOption, ScatterSeriesOption } from "echarts/charts";

import { stepReport } from "../testdata/report";
import {
  CHOSEN_NAME,
  CURVE_NAME,
  DALY_NAME,
  GOODPUT_AXIS_NAME,
  INTERVAL_AXIS_NAME,
  intervalTick,
  MC_NAME,
  MC_SPAN,
  goodputDigits,
  goodputMarks,
  goodputOption,
  goodputRange,
  goodputTooltipHTML,
  markerLabels,
} from "./goodput_series";

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);

describe("goodputMarks", () => {
  it("puts the curve in hours and %", () => {
    const m = goodputMarks(stepReport());
    // 360 s = 0.1 h, 3600 s = 1 h, 5400 s = 1.5 h, 36000 s = 10 h
    expect(m.points).toEqual([[0.1, 98], [1, 99.4], [1.5, 99.5], [10, 99]]);
    expect(m).toMatchObject({ chosenH: 1.5, dalyH: 1.5, chosenGoodput: 99.5 });
    expect(m.youngH).toBeCloseTo(1.388889, 6);
    expect(m.monteCarlo).toEqual({ mean: 99.48, p5: 99, p95: 99.7, runs: 200 });
  });

  it("ranges y over the curve and the Monte-Carlo band, padded, at most 100%", () => {
    const [lo, hi] = goodputRange(goodputMarks(stepReport()));
    // 98 .. 99.7, pad 8% of 1.7 = 0.136
    expect(lo).toBeCloseTo(97.864);
    expect(hi).toBeCloseTo(99.836);
    expect(goodputDigits(hi - lo)).toBe(1);
    expect(goodputDigits(0.3)).toBe(2);
    expect(goodputDigits(0.02)).toBe(3);
  });
});

describe("goodputOption", () => {
  const option = goodputOption(stepReport());
  const series = asArray(option.series) as (LineSeriesOption | ScatterSeriesOption)[];

  it("has a log x axis in hours and a y axis in %", () => {
    const x = asArray(option.xAxis)[0] as { type: string; name: string; min: number; max: number; axisLabel: { formatter: (v: number) => string } };
    expect(x).toMatchObject({ type: "log", name: INTERVAL_AXIS_NAME });
    expect(x.min).toBeCloseTo(0.08); // 0.1 h / 1.25
    expect(x.max).toBeCloseTo(12.5); // 10 h x 1.25
    // ticks in the unit that reads at their size (the axis's values are hours)
    expect(x.axisLabel.formatter(0.1)).toBe("6 min");
    expect(x.axisLabel.formatter(1)).toBe("1 h");
    expect(x.axisLabel.formatter(10)).toBe("10 h");
    expect(intervalTick(0.01)).toBe("36 s");
    expect(intervalTick(100)).toBe("100 h");
    expect(intervalTick(1000)).toMatch(/^1,?000 h$/);
    // 1e5 h / (24 x 365.25) = 11.41 years
    expect(intervalTick(1e5)).toBe("11.4 years");
    const y = asArray(option.yAxis)[0] as { name: string; axisLabel: { formatter: (v: number) => string } };
    expect(y.name).toBe(GOODPUT_AXIS_NAME);
    expect(y.axisLabel.formatter(99.5)).toBe("99.5%");
  });

  it("draws the curve, the chosen point and the Monte-Carlo mean", () => {
    expect(series.map((s) => s.name)).toEqual([CURVE_NAME, CHOSEN_NAME, MC_NAME]);
    expect((series[1].data as { value: number[] }[])[0].value).toEqual([1.5, 99.5]);
    expect((series[2].data as { value: number[] }[])[0].value).toEqual([1.5, 99.48]);
  });

  it("marks Daly's optimum and the chosen interval with vertical lines, one label when they are the same", () => {
    const lines = series[0].markLine!.data as { name: string; xAxis: number; label: { formatter: string; show?: boolean } }[];
    expect(lines.map((l) => [l.name, l.xAxis])).toEqual([[DALY_NAME, 1.5], [CHOSEN_NAME, 1.5]]);
    expect(lines[0].label.show).toBe(false);
    expect(lines[1].label.formatter).toBe("chosen = Daly's optimum: 1 h 30 min");
  });

  it("puts close markers' labels on their outer sides, so they never overlap", () => {
    // chosen a little past Daly's optimum (5 h 40 min vs 5 h 36 min): chosen's label on the right
    // of its line, Daly's on the left of its own (ECharts: "Top" is left of a vertical line)
    const right = markerLabels({ chosenH: 5 + 40 / 60, dalyH: 5.6 });
    expect(right.chosen).toEqual({ show: true, text: "chosen: 5 h 40 min", position: "insideStartBottom" });
    expect(right.daly).toEqual({ show: true, text: "Daly's optimum: 5 h 36 min", position: "insideStartTop" });
    const left = markerLabels({ chosenH: 5.5, dalyH: 5.6 });
    expect(left.chosen!.position).toBe("insideStartTop");
    expect(left.daly!.position).toBe("insideStartBottom");
    // the chosen point low on the chart: its label at the top of its line, still on its outer side
    expect(markerLabels({ chosenH: 5 + 40 / 60, dalyH: 5.6 }, false).chosen!.position).toBe("insideEndBottom");
    // the same interval to the minute: one label
    const same = markerLabels({ chosenH: 5.6, dalyH: 5.6001 });
    expect(same.chosen!.text).toBe("chosen = Daly's optimum: 5 h 36 min");
    expect(same.daly!.show).toBe(false);
    // only one of them
    expect(markerLabels({ chosenH: 2, dalyH: null }).daly).toBeNull();
    expect(markerLabels({ chosenH: null, dalyH: 2 }).chosen).toBeNull();
  });

  it("draws the Monte-Carlo p5–p95 band as a box around the chosen interval", () => {
    const area = (series[2] as ScatterSeriesOption).markArea!.data as { coord: number[] }[][];
    expect(area).toHaveLength(1);
    const [a, b] = area[0];
    expect(a.coord[0]).toBeCloseTo(1.5 / MC_SPAN);
    expect(b.coord[0]).toBeCloseTo(1.5 * MC_SPAN);
    expect([a.coord[1], b.coord[1]]).toEqual([99, 99.7]);
  });

  it("keeps the Daly marker at Daly's interval when the chosen interval is given", () => {
    const r = stepReport();
    r.checkpoint!.interval_s = 360;
    r.checkpoint!.interval_source = "given";
    r.checkpoint!.goodput = 0.98;
    const lines = (asArray(goodputOption(r).series)[0] as LineSeriesOption).markLine!.data as
      { name: string; xAxis: number; label: { position: string } }[];
    expect(lines.map((l) => [l.name, l.xAxis])).toEqual([[DALY_NAME, 1.5], [CHOSEN_NAME, 0.1]]);
    // the chosen point is low (98%): its label goes to the top of the line, away from it, on
    // the left (its outer side: Daly's optimum is to its right, with its label on its right)
    expect(lines[1].label.position).toBe("insideEndTop");
    expect(lines[0].label.position).toBe("insideStartBottom");
    const high = (asArray(goodputOption(stepReport()).series)[0] as LineSeriesOption).markLine!.data as { label: { position: string } }[];
    expect(high[1].label.position).toBe("insideStartTop");
  });

  it("says the interval and the goodput in the tooltip", () => {
    const m = goodputMarks(stepReport());
    expect(goodputTooltipHTML({ seriesName: CURVE_NAME, value: [1, 99.4] }, m, 1)).toBe(
      `<strong>${CURVE_NAME}</strong><br>Interval: 1 h<br>Goodput: 99.40%`);
    expect(goodputTooltipHTML({ seriesName: MC_NAME, value: [1.5, 99.48] }, m, 1)).toContain("p5–p95: 99.00% – 99.70%");
  });

  it("leaves out the Monte-Carlo band when the report has none", () => {
    const r = stepReport();
    r.checkpoint!.monte_carlo = null;
    expect(asArray(goodputOption(r).series).map((s) => (s as { name: string }).name)).toEqual([CURVE_NAME, CHOSEN_NAME]);
  });
});
