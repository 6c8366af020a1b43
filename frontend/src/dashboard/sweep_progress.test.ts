import { describe, expect, it } from "vitest";

import { sweepProgressText } from "./sweep_progress";

describe("sweep progress", () => {
  it("counts the points done of the total while it runs", () => {
    expect(sweepProgressText({ status: "running", progress: 4 / 6, done_points: 4, total_points: 6, chunks: 2,
                               cancelled_points: 0 })).toBe("4 of 6 points (67%) in 2 jobs");
    expect(sweepProgressText({ status: "succeeded", progress: 1, done_points: 10000, total_points: 10000,
                               chunks: 20 })).toBe("10,000 of 10,000 points (100%) in 20 jobs");
  });

  it("says what a cancelled sweep evaluated and what it cancelled, not 100 %", () => {
    expect(sweepProgressText({ status: "cancelled", progress: 2989 / 10000, done_points: 2989, total_points: 10000,
                               chunks: 20, cancelled_points: 7011 }))
      .toBe("2,989 of 10,000 points evaluated (30%); 7,011 cancelled before they ran, in 20 jobs");
    expect(sweepProgressText({ status: "cancelled", progress: 5 / 6, done_points: 5, total_points: 6, chunks: 1,
                               cancelled_points: 1 }))
      .toBe("5 of 6 points evaluated (83%); 1 cancelled before it ran, in 1 job");
  });
});
