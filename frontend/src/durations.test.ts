// Huge durations in human units (a newcomer's 640,663,255 s step read "640,663,255.316 s",
// its chart axis "2,000,000,000 s", its timeline caption "1,423.7 h" over an axis in seconds),
// one formatter everywhere, and the comparison's three-state memory verdict.
import { describe, expect, it } from "vitest";

import { stepReport } from "./testdata/report";
import { checkpointRows } from "./checkpoint";
import { stepBreakdownOption, segmentText } from "./charts/step_series";
import { timelineOption } from "./charts/timeline_series";
import { compareStepOption } from "./charts/compare_series";
import { betterWord, formatValue } from "./dashboard/format";
import { durationTickFormatter, durationUnit, formatDuration, formatSeconds, formatSecondsSig } from "./units";
import type { Report } from "./types";

const asArray = <T,>(v: T | T[]): T[] => (Array.isArray(v) ? v : [v]);
type Axis = { name: string; axisLabel: { formatter: (v: number) => string } };

// 640,663,255.316 s / (365.25 × 86,400 s) = 20.30 years; 5.125e6 s / 86,400 s = 59.3 days
const HUGE_S = 640663255.316;

describe("one duration formatter, ms to years", () => {
  it("picks min, h, days and years by size (a year is 365.25 days)", () => {
    expect(formatSeconds(0.0123)).toBe("12.3 ms");
    expect(formatSeconds(4.2)).toBe("4.20 s");
    expect(formatSeconds(90)).toBe("1.5 min");
    expect(formatSeconds(7200)).toBe("2.0 h");
    expect(formatSeconds(1423.7 * 3600)).toBe("59.3 days");
    expect(formatSeconds(HUGE_S)).toBe("20.3 years");
    expect(formatSecondsSig(HUGE_S)).toBe("20.3 years");        // the breakdown table's cell
    expect(formatSecondsSig(1.5)).toBe("1.500 s");
    expect(formatDuration(HUGE_S)).toBe("20.3 years (7,415 days)");
  });

  it("labels an axis in the unit its range reads in", () => {
    expect(durationUnit(20).symbol).toBe("s");
    expect(durationUnit(1800).symbol).toBe("min");
    expect(durationUnit(5 * 3600).symbol).toBe("h");
    expect(durationUnit(30 * 86400).symbol).toBe("days");
    expect(durationUnit(2e9).symbol).toBe("years");
    const tick = durationTickFormatter(2e9);
    // 2e9 s / 31,557,600 s = 63.38 years; 5e8 s = 15.84 years
    expect(tick(2e9)).toBe("63.38 years");
    expect(tick(5e8)).toBe("15.84 years");
    expect(durationTickFormatter(20)(2.5)).toBe("2.5 s");
    expect(durationTickFormatter(3600 * 2)(1800)).toBe("30 min");
  });
});

function hugeReport(): Report {
  const r = stepReport();
  const k = HUGE_S / 10;                                          // the 10 s step scaled
  r.step!.time_s = HUGE_S;
  for (const key of Object.keys(r.step!.breakdown_s!)) {
    (r.step!.breakdown_s as Record<string, number>)[key] *= k;
  }
  r.timeline!.tasks = r.timeline!.tasks.map((t) => ({ ...t, start_s: t.start_s * 1.65e7, end_s: t.end_s * 1.65e7 }));
  r.timeline!.makespan_s = 0.31 * 1.65e7;                         // 5.1e6 s: 59.2 days
  return r;
}

describe("charts of a huge step", () => {
  it("step bar: axis and labels in years, never nine digits of seconds", () => {
    const option = stepBreakdownOption(hugeReport());
    const x = asArray(option.xAxis)[0] as unknown as Axis;
    expect(x.name).toBe("Time per step (years)");
    expect(x.axisLabel.formatter(2e9)).toBe("63.38 years");
    const seg = { key: "compute", label: "Compute", seconds: 0.6 * HUGE_S, fraction: 0.6 };
    expect(segmentText(seg as never)).toBe("Compute: 12.2 years (60.0% of the step)");
  });

  it("timeline: the axis in days, as the caption's formatSeconds says it", () => {
    const report = hugeReport();
    const x = asArray(timelineOption(report).xAxis)[0] as unknown as Axis;
    expect(formatSeconds(report.timeline!.makespan_s ?? 0)).toBe("59.2 days");
    expect(x.name).toBe("Time since the micro-batch started (days)");
    expect(x.axisLabel.formatter(86400 * 10)).toBe("10 days");
  });

  it("comparison step chart: the axis in years", () => {
    const option = compareStepOption([{ label: "1. a", report: hugeReport(), position: 0 } as never]);
    const x = asArray(option.xAxis)[0] as unknown as Axis;
    expect(x.name).toBe("Time per step (years)");
    expect(x.axisLabel.formatter(1e9)).toBe("31.69 years");
  });
});

describe("words", () => {
  it("a checkpoint every 1 step is singular", () => {
    const r = stepReport();
    r.checkpoint = { ...(r.checkpoint ?? {}), interval_s: 3600, interval_steps: 1, stall_s: 1, goodput: 0.9,
      size_bytes: 1e9, interval_source: "given" } as never;
    const text = JSON.stringify(checkpointRows(r));
    expect(text).toContain("every 1 step;");
    expect(text).not.toContain("every 1 steps");
  });

  it("the comparison's memory verdict has three states", () => {
    expect(formatValue("tight", "fit_state")).toBe("Tight: it may not fit");
    expect(formatValue("fits", "fit_state")).toBe("Fits");
    expect(formatValue("does_not_fit", "fit_state")).toBe("Does not fit");
    expect(betterWord("max", "fit_state")).toBe("fits");
  });
});
