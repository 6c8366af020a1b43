import { describe, expect, it } from "vitest";
import { pollDelay, progressFraction } from "./poll";

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
