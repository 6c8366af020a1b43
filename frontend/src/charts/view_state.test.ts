import { describe, expect, it } from "vitest";

import { stepReport } from "../testdata/report";
import { timelineOption } from "./timeline_series";
import { applyViewState, hasViewState, readViewState } from "./view_state";

type Any = any;

// What chart.getOption() gives back after the reader zoomed to 20–45% and hid "Compute".
const drawn = {
  dataZoom: [
    { type: "slider", start: 20, end: 45, startValue: 0.02, endValue: 0.045 },
    { type: "inside", start: 20, end: 45, startValue: 0.02, endValue: 0.045 },
  ],
  legend: [{ selected: { Compute: false, "All-gather": true } }],
};

describe("view state", () => {
  it("reads the zoom windows and legend selection of a drawn chart", () => {
    expect(readViewState(drawn)).toEqual({
      zoom: [{ start: 20, end: 45 }, { start: 20, end: 45 }],
      legend: { Compute: false, "All-gather": true },
    });
    expect(readViewState({})).toEqual({ zoom: [], legend: null });
    expect(readViewState(undefined)).toEqual({ zoom: [], legend: null });
    expect(readViewState({ dataZoom: [{ type: "inside" }] }).zoom).toEqual([null]);
  });

  it("keeps only what the reader changed", () => {
    expect(hasViewState(readViewState(drawn))).toBe(true);
    expect(hasViewState({ zoom: [{ start: 0, end: 100 }], legend: { Compute: true } })).toBe(false);
    expect(hasViewState({ zoom: [], legend: { Compute: false } })).toBe(true);
    expect(hasViewState(null)).toBe(false);
  });

  it("puts the zoom and the hidden series back into the timeline rebuilt in the dark scheme", () => {
    const fresh = timelineOption(stepReport(), { dark: true }) as Any;
    const kept = applyViewState(fresh, readViewState(drawn)) as Any;
    expect(kept.dataZoom.map((dz: Any) => [dz.type, dz.start, dz.end])).toEqual([["slider", 20, 45], ["inside", 20, 45]]);
    expect(kept.dataZoom[0].startValue).toBeUndefined();
    // the rest of the slider is the fresh, dark one
    expect(kept.dataZoom[0].labelFormatter).toBe(fresh.dataZoom[0].labelFormatter);
    expect(kept.dataZoom[0].textStyle).toEqual(fresh.dataZoom[0].textStyle);
    expect(kept.legend.selected).toMatchObject({ Compute: false });
    expect(kept.series).toBe(fresh.series);
    // the fresh option is left as it was
    expect(fresh.dataZoom[0].start).toBeUndefined();
    expect(fresh.legend.selected).toBeUndefined();
  });

  it("changes nothing on a first draw or an untouched chart", () => {
    const fresh = timelineOption(stepReport(), {});
    expect(applyViewState(fresh, null)).toBe(fresh);
    expect(applyViewState(fresh, readViewState({ dataZoom: [{ start: 0, end: 100 }] }))).toBe(fresh);
  });

  it("accepts a single dataZoom or legend object as well as arrays", () => {
    const out = applyViewState({ dataZoom: { type: "inside" }, legend: { top: 0 } },
      { zoom: [{ start: 5, end: 10 }], legend: { a: false } }) as Any;
    expect(out.dataZoom).toEqual({ type: "inside", start: 5, end: 10 });
    expect(out.legend).toEqual({ top: 0, selected: { a: false } });
  });
});
