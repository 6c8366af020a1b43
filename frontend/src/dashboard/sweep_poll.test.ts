import { describe, expect, it } from "vitest";

import { FULL_EVERY_MS, lightUrl, needsPoints } from "./sweep_poll";

describe("lightUrl", () => {
  it("asks the sweep's own API, or its share link's, for no points", () => {
    expect(lightUrl("/api/v1/sweeps/12/")).toBe("/api/v1/sweeps/12/?points=none");
    // a share link's page read the whole sweep on every poll (~7 MB at 10,000 points)
    expect(lightUrl("/api/v1/shared/aB3_x-9/")).toBe("/api/v1/shared/aB3_x-9/?points=none");
    expect(lightUrl("/api/v1/comparisons/3/")).toBeNull();
  });
});

describe("needsPoints", () => {
  const running = { done_points: 40, status: "running" };
  it("fetches the points first, then only when they changed and a while has passed", () => {
    expect(needsPoints(running, null, 0)).toBe(true);
    expect(needsPoints(running, { done_points: 40, status: "running" }, 60_000)).toBe(false);
    expect(needsPoints(running, { done_points: 20, status: "running" }, FULL_EVERY_MS - 1)).toBe(false);
    expect(needsPoints(running, { done_points: 20, status: "running" }, FULL_EVERY_MS)).toBe(true);
  });
  it("fetches them once when the sweep finishes, whenever the last was", () => {
    const done = { done_points: 100, status: "succeeded" };
    expect(needsPoints(done, { done_points: 100, status: "running" }, 0)).toBe(true);
    expect(needsPoints(done, { done_points: 40, status: "running" }, 0)).toBe(true);
    expect(needsPoints(done, { done_points: 100, status: "succeeded" }, 0)).toBe(false);
  });

  it("counts failed points as points that changed", () => {
    const drawn = { done_points: 40, failed_points: 0, status: "running" };
    expect(needsPoints({ done_points: 40, failed_points: 10, status: "running" }, drawn, FULL_EVERY_MS)).toBe(true);
    expect(needsPoints({ done_points: 40, failed_points: 10, status: "failed" },
      { ...drawn, status: "failed" }, 0)).toBe(true);
  });
});
