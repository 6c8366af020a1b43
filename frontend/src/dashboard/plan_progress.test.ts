import { describe, expect, it } from "vitest";

import { bestSoFarText, planPercent, planProgressText } from "./plan_progress";

describe("plan progress", () => {
  it("is the whole percent of the candidates done, rounded down", () => {
    expect(planPercent({ done: 0, total_candidates: 2160 })).toBe(0);
    expect(planPercent({ done: 270, total_candidates: 2160 })).toBe(12);      // 12.5 %
    expect(planPercent({ done: 1234, total_candidates: 2160 })).toBe(57);     // 57.13 %
    expect(planPercent({ done: 2159, total_candidates: 2160 })).toBe(99);     // not 100 before the end
    expect(planPercent({ done: 2160, total_candidates: 2160 })).toBe(100);
    expect(planPercent({ progress: 0.999 })).toBe(99);                         // no counts: the fraction
    expect(planPercent({ progress: 1.2 })).toBe(100);
    expect(planPercent({ progress: Number.NaN })).toBe(0);
  });

  it("says candidates done of total and feasible", () => {
    expect(planProgressText({ progress: 1234 / 2160, done: 1234, total_candidates: 2160, feasible: 210 }))
      .toBe("1234 of 2160 candidates (57%), 210 feasible");
    expect(planProgressText({ progress: 0, done: 0, total_candidates: 1, feasible: 0 })).toBe("0 of 1 candidate (0%), 0 feasible");
  });

  it("names the best candidate's layout, step and cost", () => {
    const best = { index: 1041, objective: 5.214, step_time_s: 5.214, usd_per_million_tokens: 1.934,
      choices: { num_nodes: 4, tensor_parallel: 8, pipeline_parallel: 2, strategy: "zero1" } };
    const text = bestSoFarText(best);
    expect(text).toMatch(/^best so far: candidate 1041 — 4 nodes, TP 8, PP 2, zero1 — step 5\.21 s, /);
    expect(text).toContain("per M tokens");
    expect(bestSoFarText({ ...best, usd_per_million_tokens: null, choices: { num_nodes: 1 } }))
      .toBe("best so far: candidate 1041 — 1 node — step 5.21 s");
    expect(bestSoFarText(null)).toBe("");
  });
});
