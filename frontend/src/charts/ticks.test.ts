import { describe, expect, it } from "vitest";

import { axisTicks, decimalsFor, niceAxis, niceInterval, tickText } from "./ticks";

describe("nice ticks", () => {
  it("steps by 1, 2 or 5 × 10^k", () => {
    expect(niceInterval(10)).toBe(2);
    expect(niceInterval(4.4)).toBe(1);
    expect(niceInterval(0.00077)).toBeCloseTo(2e-4, 12);
    expect(niceInterval(2000)).toBe(500);
    expect(niceInterval(0)).toBe(1);
  });

  it("gives the decimals a step needs", () => {
    expect([1, 10, 500, 0.5, 0.1, 0.02, 2e-4, 1e-3].map(decimalsFor)).toEqual([0, 0, 0, 1, 1, 2, 4, 3]);
  });

  it("bounds the values on multiples of the step, never below 0 for positive values", () => {
    expect(niceAxis([4, 8, 6, 5])).toEqual({ min: 3, max: 9, interval: 1, decimals: 0 });
    expect(niceAxis([0.1, 0.5])).toEqual({ min: 0, max: 0.6, interval: 0.1, decimals: 1 });
    expect(niceAxis([-3, 3])!.min).toBe(-4);
    expect(niceAxis([])).toBeNull();
    expect(niceAxis([NaN, Infinity])).toBeNull();
  });

  it("spreads a lone value or equal values around it", () => {
    const a = niceAxis([2.5, 2.5])!;
    expect(a.min).toBeLessThan(2.5);
    expect(a.max).toBeGreaterThan(2.5);
    expect(niceAxis([0])).toEqual({ min: 0, max: 1, interval: 0.5, decimals: 1 });
  });

  it("labels adjacent ticks differently, however close the values", () => {
    for (const values of [[0.1002, 0.1009], [1.23001, 1.23002], [12_345_678, 12_345_679], [3e-7, 9e-7], [99.5, 100.5]]) {
      const axis = niceAxis(values)!;
      const ticks = axisTicks(axis);
      const labels = ticks.map((t) => tickText(t, axis));
      expect(ticks.length).toBeGreaterThanOrEqual(3);
      expect(ticks[0]).toBeLessThanOrEqual(Math.min(...values));
      expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(Math.max(...values));
      expect(new Set(labels).size, labels.join(", ")).toBe(labels.length);
    }
    expect(tickText(3, { min: 0, max: 4, interval: 0.5, decimals: 1 })).toBe("3.0");
  });
});
