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

  it("counts the failed points apart, with the first failure's error, and not as evaluated", () => {
    expect(sweepProgressText({ status: "succeeded", progress: 1, done_points: 9500, failed_points: 500, total_points: 10000,
                               chunks: 20, cancelled_points: 0,
                               first_failure: { index: 3, error: "training.global_batch_size: must be divisible" } }))
      .toBe("9,500 of 10,000 points evaluated (95%) in 20 jobs; 500 failed: training.global_batch_size: must be divisible");
    expect(sweepProgressText({ status: "failed", progress: 1, done_points: 0, failed_points: 6, total_points: 6,
                               chunks: 1, first_failure: { index: 0, error: "training.fp8.recipe: not a recipe" } }))
      .toBe("0 of 6 points evaluated (0%) in 1 job; 6 failed: training.fp8.recipe: not a recipe");
    expect(sweepProgressText({ status: "cancelled", progress: 3 / 6, done_points: 2, failed_points: 1, total_points: 6,
                               chunks: 2, cancelled_points: 3, first_failure: { index: 1, error: "x: bad" } }))
      .toBe("2 of 6 points evaluated (33%); 3 cancelled before they ran, in 2 jobs; 1 failed: x: bad");
  });
});
