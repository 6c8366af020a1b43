// Value-axis ticks a chart builder chooses itself instead of leaving them to ECharts: a
// "nice" interval (1, 2 or 5 × 10^k) over the data's range, bounds on multiples of it,
// and labels with as many decimals as the interval needs, so that adjacent ticks never
// read the same ("0.1002 s, 0.1004 s", not "0.1 s, 0.1 s"). Pure; no ECharts runtime.

import { formatNumber } from "../units";

export interface NiceAxis {
  /** First tick: a multiple of `interval`. */
  min: number;
  /** Last tick: a multiple of `interval`. */
  max: number;
  interval: number;
  /** Decimals a tick label needs to tell adjacent ticks apart. */
  decimals: number;
}

/** The nice step (1, 2 or 5 × 10^k) nearest to splitting `span` into `splits` parts. */
export function niceInterval(span: number, splits = 5): number {
  const raw = span / Math.max(1, splits);
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const base = 10 ** Math.floor(Math.log10(raw));
  const f = raw / base;
  // toPrecision: 2 * 1e-4 is 0.00019999999999999998 in floating point
  return Number(((f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * base).toPrecision(1));
}

/** Decimals that show every multiple of `interval` exactly: 0.5 -> 1, 2e-4 -> 4, 20 -> 0. */
export function decimalsFor(interval: number): number {
  if (!(interval > 0) || !Number.isFinite(interval)) return 0;
  return Math.max(0, Math.min(12, -Math.floor(Math.log10(interval) + 1e-9)));
}

const roundTo = (x: number, decimals: number) => Number(x.toFixed(decimals));

/**
 * Bounds and step of an axis over `values` (non-finite ones ignored): the range padded
 * by `pad` of its span on each side (a lone value gets ±10% of itself), widened to
 * multiples of a nice interval; never below 0 when no value is. null without values.
 */
export function niceAxis(values: readonly number[], splits = 5, pad = 0.05): NiceAxis | null {
  const finite = values.filter((v) => Number.isFinite(v));
  if (!finite.length) return null;
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  const span = hi - lo;
  const margin = span > 0 ? span * pad : Math.abs(lo) * 0.1 || 1;
  const interval = niceInterval(span > 0 ? span + 2 * margin : 2 * margin, splits);
  const decimals = decimalsFor(interval);
  let min = roundTo(Math.floor((lo - margin) / interval) * interval, decimals);
  const max = roundTo(Math.ceil((hi + margin) / interval) * interval, decimals);
  if (lo >= 0 && min < 0) min = 0;
  return { min, max, interval, decimals };
}

/**
 * `niceAxis` for a quantity measured from zero (a cost, a time): when the values differ by
 * less than `closeFraction` of the largest, the axis starts at 0, so a 0.2 % difference
 * looks like one instead of filling the plot; otherwise the tight `niceAxis`.
 */
export function ratioAxis(values: readonly number[], closeFraction = 0.1, splits = 5): NiceAxis | null {
  const finite = values.filter((v) => Number.isFinite(v));
  if (!finite.length) return null;
  const lo = Math.min(...finite);
  const hi = Math.max(...finite);
  if (lo < 0 || hi <= 0 || (hi - lo) / hi >= closeFraction) return niceAxis(finite, splits);
  return niceAxis([0, ...finite], splits, 0.05);
}

/** The ticks ECharts draws on an axis with these bounds and step (min, min + interval, … max). */
export function axisTicks(axis: Pick<NiceAxis, "min" | "max" | "interval">): number[] {
  const n = Math.round((axis.max - axis.min) / axis.interval);
  const decimals = decimalsFor(axis.interval);
  return Array.from({ length: n + 1 }, (_, i) => roundTo(axis.min + i * axis.interval, decimals));
}

/** A tick's number with the axis's decimals: 0.1004 -> "0.1004", 3 -> "3.0" (interval 0.5). */
export function tickText(value: number, axis: NiceAxis): string {
  return formatNumber(value, axis.decimals);
}

/**
 * Decimals that show `values` with `sig` significant digits of the largest and tell every
 * two different ones apart: 99.821 % and 99.822 % need 3, not the 0 that three significant
 * digits of 99.8 give. At most `maxExtra` more than the significant digits need (differences
 * below that read as equal), and never more than 12.
 */
export function distinctDecimals(values: readonly number[], sig = 3, maxExtra = 4): number {
  // 9 significant digits: 99.82100000000001 (a scaled 0.9982100) is 99.821
  const distinct = [...new Set(values.filter((v) => Number.isFinite(v)).map((v) => Number(v.toPrecision(9))))];
  if (!distinct.length) return 0;
  const big = Math.max(...distinct.map(Math.abs));
  const base = big > 0 ? Math.max(0, Math.min(12, sig - 1 - Math.floor(Math.log10(big)))) : 0;
  const most = Math.min(12, base + maxExtra);
  for (let d = base; d < most; d++) {
    if (new Set(distinct.map((v) => v.toFixed(d))).size === distinct.length) return d;
  }
  return most;
}

export interface ZoomAxis {
  /** 0 and a multiple of `interval` at or above the data's end, so the last label is round. */
  min: number;
  max: number;
  /**
   * The step unzoomed. Give it to ECharts as maxInterval, not interval: ECharts then never
   * steps wider (past `max`, leaving it an odd label of its own) yet steps finer as it zooms.
   */
  interval: number;
  /** The narrowest window the reader may zoom to (ECharts' dataZoom minValueSpan). */
  minSpan: number;
  /** Decimals a label needs at the deepest zoom (ECharts chooses the ticks as it zooms). */
  decimals: number;
}

/**
 * A zoomable axis from 0 to `end` (a timeline's makespan): its end on a nice step instead
 * of the data's own ("40 s", not "36.9719 s"), zoom limited to `maxZoom` times, and the
 * decimals labels need down to that zoom. null when `end` is not a positive number.
 */
export function zoomAxis(end: number, maxZoom = 1000, splits = 5): ZoomAxis | null {
  if (!(end > 0) || !Number.isFinite(end)) return null;
  const interval = niceInterval(end, splits);
  const max = roundTo(Math.ceil(end / interval - 1e-9) * interval, decimalsFor(interval));
  const minSpan = max / maxZoom;
  return { min: 0, max, interval, minSpan, decimals: decimalsFor(niceInterval(minSpan, splits)) };
}
