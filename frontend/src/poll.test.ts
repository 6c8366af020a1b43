import { describe, expect, it } from "vitest";
import {
  ACTIVE_POLL_MS, FIRST_RUN_POLL, formatElapsed, nextRunPoll, pollDelay, progressFraction, runElapsedSeconds,
  type RunPollState,
} from "./poll";

describe("pollDelay", () => {
  it("backs off from 0.5 s by 1.5x up to 5 s", () => {
    // 500, 750, 1125, 1687.5 -> 1688, 2531.25 -> 2531, 3796.875 -> 3797, 5695 -> capped
    expect([0, 1, 2, 3, 4, 5, 6, 20].map((a) => pollDelay(a, false))).toEqual([500, 750, 1125, 1688, 2531, 3797, 5000, 5000]);
  });
  it("polls slowly while the tab is hidden", () => {
    expect(pollDelay(0, true)).toBe(15000);
  });
});

describe("progressFraction", () => {
  it("reads 0..1 and 0..100 and clamps", () => {
    expect(progressFraction(0.25)).toBe(0.25);
    expect(progressFraction(40)).toBe(0.4);
    expect(progressFraction(150)).toBe(1);
    expect(progressFraction(-1)).toBe(0);
    expect(progressFraction(null)).toBeNull();
    expect(progressFraction(undefined)).toBeNull();
  });
});

/** Polls a run whose progress at each poll is `progressAt(t)`; the delays between polls. */
function pace(progressAt: (t: number) => number | null, polls: number, status = "running", hidden = false): number[] {
  let state: RunPollState = FIRST_RUN_POLL;
  let t = 0;
  const delays: number[] = [];
  for (let k = 0; k < polls; k++) {
    const next = nextRunPoll(state, { status, progress: progressAt(t) }, t, hidden);
    state = next.state;
    delays.push(next.delay);
    t += next.delay;
  }
  return delays;
}

describe("nextRunPoll", () => {
  it("polls a progressing run at least every second, however long it has run", () => {
    // progress grows with time: 1 % a second for 100 s
    const delays = pace((t) => Math.min(1, t / 100_000), 100);
    expect(Math.max(...delays)).toBeLessThanOrEqual(ACTIVE_POLL_MS);
    expect(delays.slice(0, 3)).toEqual([500, 750, 1000]);
    expect(delays.slice(-5)).toEqual([1000, 1000, 1000, 1000, 1000]);
  });

  it("backs off to 5 s once the run stops moving, from about a second", () => {
    // moves for 10 s, then stays at 40 %: the poll at 10.25 s is the last to see it move,
    // 5 s on the back-off resumes
    const delays = pace((t) => (t < 10_000 ? t / 25_000 : 0.4), 40);
    const t = delays.map((_, i) => delays.slice(0, i).reduce((a, b) => a + b, 0));
    expect(delays.filter((_, i) => t[i] < 15_250).every((d) => d <= ACTIVE_POLL_MS)).toBe(true);
    const after = delays.filter((_, i) => t[i] >= 15_250);
    expect(after.slice(0, 4)).toEqual([1125, 1688, 2531, 3797]);
    expect(after.at(-1)).toBe(5000);
  });

  it("backs off as before while queued, and for a running run that reports nothing", () => {
    expect(pace(() => null, 8, "queued")).toEqual([500, 750, 1125, 1688, 2531, 3797, 5000, 5000]);
    // started running (it moved): a second at most for 5 s, then backing off
    const still = pace(() => 0, 14);
    expect(still.slice(0, 7)).toEqual([500, 750, 1000, 1000, 1000, 1000, 1125]);
    expect(still.slice(6, 12)).toEqual([1125, 1688, 2531, 3797, 5000, 5000]);
  });

  it("polls slowly while the tab is hidden, progressing or not", () => {
    expect(pace((t) => t / 1e6, 3, "running", true)).toEqual([15000, 15000, 15000]);
  });
});

describe("runElapsedSeconds", () => {
  const now = Date.parse("2026-01-01T00:01:40Z");
  it("counts from the start of a running run and the creation of a queued one", () => {
    expect(runElapsedSeconds({ status: "running", started_at: "2026-01-01T00:00:00Z",
      created_at: "2025-12-31T23:59:00Z" }, now)).toBe(100);
    expect(runElapsedSeconds({ status: "queued", created_at: "2026-01-01T00:01:30Z" }, now)).toBe(10);
    expect(runElapsedSeconds({ status: "succeeded", started_at: "2026-01-01T00:00:00Z" }, now)).toBeNull();
  });
  it("never reads less than the page has watched (a browser clock behind the server's)", () => {
    expect(runElapsedSeconds({ status: "running", started_at: "2026-01-01T00:05:00Z" }, now, 3)).toBe(3);
    expect(runElapsedSeconds({ status: "running", started_at: null }, now, 2.5)).toBe(2.5);
    expect(runElapsedSeconds({ status: "running" }, now)).toBeNull();
  });
});

describe("formatElapsed", () => {
  it("reads whole seconds, then minutes and seconds, then hours and minutes", () => {
    expect([0, 7.9, 59.99, 60, 125, 3599, 3600, 3725].map(formatElapsed))
      .toEqual(["0 s", "7 s", "59 s", "1 min 00 s", "2 min 05 s", "59 min 59 s", "1 h 00 min", "1 h 02 min"]);
  });
});
