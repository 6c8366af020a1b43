import { describe, expect, it } from "vitest";

import { FULL_EVERY_MS, lightUrl, needsPoints } from "./sweep_poll";

describe("lightUrl", () => {
  it("asks the sweep's own API for no points; a share link's is read whole", () => {
    expect(lightUrl("/api/v1/sweeps/12/")).toBe("/api/v1/sweeps/12/?points=none");
    expect(lightUrl("/api/v1/shared/abc/")).toBeNull();
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
});
