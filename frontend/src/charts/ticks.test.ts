import { describe, expect, it } from "vitest";

import { axisTicks, decimalsFor, distinctDecimals, niceAxis, niceInterval, ratioAxis, tickText, zoomAxis } from "./ticks";

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

describe("decimals of values shown side by side", () => {
  it("gives three significant digits, more where neighbours would read the same", () => {
    expect(distinctDecimals([8, 6, 4])).toBe(2);            // 8.00, 6.00, 4.00
    expect(distinctDecimals([14_602, 9_870])).toBe(0);
    expect(distinctDecimals([0.149, 0.17])).toBe(3);
    expect(distinctDecimals([99.82, 99.821, 99.859])).toBe(3);
    expect(distinctDecimals([99.8, 97.1])).toBe(1);
    // a scaled fraction's floating-point noise is no difference
    expect(distinctDecimals([0.99821 * 100, 99.821, 99.9])).toBe(1);
    expect(distinctDecimals([])).toBe(0);
    expect(distinctDecimals([0, 0])).toBe(0);
  });

  it("stops at four more than the significant digits need", () => {
    expect(distinctDecimals([1, 1 + 1e-7])).toBe(6);
    expect(distinctDecimals([1, 1 + 1e-7], 3, 2)).toBe(4);
  });

  it("tells every two different values apart", () => {
    const values = Array.from({ length: 40 }, (_, i) => 99.82 + i * 0.001);
    const d = distinctDecimals(values);
    expect(new Set(values.map((v) => v.toFixed(d))).size).toBe(40);
    expect(d).toBe(3);
  });
});

describe("a zoomable axis from 0", () => {
  it("ends on a multiple of its step at or past the data's end", () => {
    expect(zoomAxis(36.9719)).toEqual({ min: 0, max: 40, interval: 10, minSpan: 0.04, decimals: 2 });
    expect(zoomAxis(0.31)).toMatchObject({ max: 0.35, interval: 0.05 });
    expect(zoomAxis(0.2)).toMatchObject({ max: 0.2, interval: 0.05 });
    expect(zoomAxis(2.3e-4)).toMatchObject({ max: 2.5e-4, interval: 5e-5 });
    expect(zoomAxis(0)).toBeNull();
    expect(zoomAxis(NaN)).toBeNull();
  });

  it("needs more decimals the deeper it may zoom", () => {
    expect(zoomAxis(40, 10)!.decimals).toBe(0);
    expect(zoomAxis(40, 1000)!.decimals).toBe(2);
    expect(zoomAxis(0.2, 1000)!.decimals).toBe(5);
  });
});

describe("an axis of a quantity measured from zero", () => {
  it("starts at 0 when the values are within 10 % of each other, else stays tight", () => {
    expect(ratioAxis([1.494, 1.497])?.min).toBe(0);
    expect(ratioAxis([1, 3.5])).toEqual(niceAxis([1, 3.5]));      // 71 % apart: tight
    expect(ratioAxis([])).toBeNull();
  });
});
