// Goodput vs checkpoint interval (Daly 2006): the engine's curve on a log axis in hours,
// the chosen interval and Daly's optimum marked, and the Monte-Carlo runs' mean with their
// p5–p95 band drawn as a box around the chosen interval. Pure: only ECharts types imported.

import type { LineSeriesOption, ScatterSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  GridComponentOption,
  LegendComponentOption,
  MarkAreaComponentOption,
  MarkLineComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import type { Report } from "../types";
import { formatDuration, formatNumber, formatTick } from "../units";
import type { ChartStyle } from "./series";
import { chartFrame } from "./option_parts";

export type GoodputChartOption = ComposeOption<
  | LineSeriesOption
  | ScatterSeriesOption
  | GridComponentOption
  | LegendComponentOption
  | TooltipComponentOption
  | MarkLineComponentOption
  | MarkAreaComponentOption
  | AriaComponentOption
>;

export const INTERVAL_AXIS_NAME = "Checkpoint interval (log scale)";
export const GOODPUT_AXIS_NAME = "Goodput (% of wall time)";

/**
 * A tick of the interval axis (its values are hours, the log axis's ticks decades of them)
 * in the unit that reads at its size: 0.01 -> "36 s", 0.1 -> "6 min", 1 -> "1 h",
 * 100 -> "100 h", 1000 -> "1000 h", 1e5 -> "11.4 years" (seconds under a minute,
 * minutes under an hour, hours under 10,000 h, where a decade in days would read
 * "4.167 d", then years of 365.25 days to one decimal).
 */
export function intervalTick(hours: number): string {
  const s = hours * 3600;
  if (s < 60) return `${formatTick(s)} s`;
  if (s < 3600) return `${formatTick(s / 60)} min`;
  if (hours < 10000) return `${formatTick(hours)} h`;
  return `${formatTick(hours / (24 * 365.25), 1)} years`;
}
export const CURVE_NAME = "Goodput (Daly's model)";
export const CHOSEN_NAME = "Chosen interval";
export const DALY_NAME = "Daly's optimum";
export const MC_NAME = "Monte-Carlo mean, p5–p95";

const HOUR = 3600;
/** Hours kept to 6 decimals, percentages to 5, so options compare exactly. */
const h6 = (s: number) => Math.round((s / HOUR) * 1e6) / 1e6;
const p5d = (f: number) => Math.round(f * 100 * 1e5) / 1e5;

/** Width of the Monte-Carlo box: from chosen / MC_SPAN to chosen × MC_SPAN (log axis). */
export const MC_SPAN = 1.18;

export interface GoodputMarks {
  /** [hours, goodput %] per point of the engine's curve. */
  points: [number, number][];
  chosenH: number | null;
  dalyH: number | null;
  youngH: number | null;
  /** Goodput (%) at the chosen interval, from the closed form. */
  chosenGoodput: number | null;
  monteCarlo: { mean: number; p5: number; p95: number; runs: number } | null;
}

export function goodputMarks(report: Report): GoodputMarks {
  const ck = report.checkpoint;
  const curve = ck?.curve;
  const points: [number, number][] = [];
  (curve?.interval_s ?? []).forEach((s, i) => {
    const g = curve?.goodput?.[i];
    if (s > 0 && typeof g === "number" && Number.isFinite(g)) points.push([h6(s), p5d(g)]);
  });
  const pos = (v: number | undefined) => (typeof v === "number" && v > 0 ? h6(v) : null);
  const mc = ck?.monte_carlo;
  return {
    points,
    chosenH: pos(ck?.interval_s),
    dalyH: pos(ck?.daly_interval_s),
    youngH: pos(ck?.young_interval_s),
    chosenGoodput: typeof ck?.goodput === "number" ? p5d(ck.goodput) : null,
    monteCarlo: mc && typeof mc.p5 === "number" && typeof mc.p95 === "number"
      ? { mean: p5d(mc.mean_goodput), p5: p5d(mc.p5), p95: p5d(mc.p95), runs: mc.runs }
      : null,
  };
}

/** Decimals a goodput axis needs so neighbouring ticks differ: a 0.5-point span needs 2. */
export function goodputDigits(span: number): number {
  if (span <= 0.05) return 3;
  if (span <= 0.5) return 2;
  if (span <= 5) return 1;
  return 0;
}

/** The y range (%): every point, the Monte-Carlo band, padded by 8%, never above 100. */
export function goodputRange(m: GoodputMarks): [number, number] {
  const ys = [...m.points.map((p) => p[1])];
  if (m.chosenGoodput !== null) ys.push(m.chosenGoodput);
  if (m.monteCarlo) ys.push(m.monteCarlo.p5, m.monteCarlo.p95, m.monteCarlo.mean);
  if (!ys.length) return [0, 100];
  const lo = Math.min(...ys);
  const hi = Math.max(...ys);
  const pad = Math.max((hi - lo) * 0.08, 0.001);
  return [Math.max(0, lo - pad), Math.min(100, hi + pad)];
}

const hoursText = (h: number) => formatDuration(h * HOUR);

/** Where a vertical mark line's label sits: near the bottom or the top, left or right of it. */
export type MarkLabelPosition = "insideStartTop" | "insideStartBottom" | "insideEndTop" | "insideEndBottom";

export interface MarkLabel {
  show: boolean;
  text: string;
  position: MarkLabelPosition;
}

/**
 * The labels of the chosen interval's line and of Daly's optimum. Each label runs along its
 * line on the side away from the other line (along a vertical line, ECharts' "Top" is its
 * left, "Bottom" its right), so close lines never put their labels on top of each other;
 * when both read the same interval, one label says both. `high`: the chosen point is in
 * the upper half, so its label sits at the bottom, out of its way (Daly's always does:
 * the curve peaks at the top of its line).
 */
export function markerLabels(m: Pick<GoodputMarks, "chosenH" | "dalyH">, high = true): {
  chosen: MarkLabel | null;
  daly: MarkLabel | null;
} {
  const end = high ? "insideStart" : "insideEnd";
  const chosenText = m.chosenH !== null ? hoursText(m.chosenH) : null;
  const dalyText = m.dalyH !== null ? hoursText(m.dalyH) : null;
  if (chosenText !== null && chosenText === dalyText) {
    return {
      chosen: { show: true, text: `chosen = ${DALY_NAME}: ${chosenText}`, position: `${end}Top` },
      daly: { show: false, text: "", position: `${end}Bottom` },
    };
  }
  // the line further right has its label on its right, the other on its left
  const chosenRight = m.chosenH !== null && m.dalyH !== null && m.chosenH > m.dalyH;
  return {
    chosen: chosenText === null ? null
      : { show: true, text: `chosen: ${chosenText}`, position: `${end}${chosenRight ? "Bottom" : "Top"}` },
    // at the bottom always: the top of Daly's line is where the curve peaks
    daly: dalyText === null ? null
      : { show: true, text: `${DALY_NAME}: ${dalyText}`, position: chosenRight || m.chosenH === null ? "insideStartTop" : "insideStartBottom" },
  };
}

export function goodputOption(report: Report, style: ChartStyle = {}): GoodputChartOption {
  const m = goodputMarks(report);
  const [yMin, yMax] = goodputRange(m);
  const digits = goodputDigits(yMax - yMin);
  const xs = [...m.points.map((p) => p[0]), m.chosenH, m.dalyH].filter((x): x is number => x !== null && x > 0);
  const xMin = xs.length ? Math.min(...xs) / 1.25 : 0.01;
  const xMax = xs.length ? Math.max(...xs) * 1.25 : 100;
  const ink = style.dark ? "#dfe3ea" : "#2d333b";
  const bg = style.dark ? "#13171f" : "#ffffff";
  const chosenColor = style.dark ? "#ff9da7" : "#c2185b";
  const dalyColor = style.dark ? "#8ecae6" : "#1f5f99";
  const mcColor = style.dark ? "#ffd166" : "#a15c00";

  const markLines: NonNullable<MarkLineComponentOption["data"]> = [];
  // The label runs along the chosen line at the end away from the chosen point (and its
  // Monte-Carlo box): at the bottom when the point is high, at the top when it is low.
  const high = m.chosenGoodput === null || (m.chosenGoodput - yMin) / (yMax - yMin || 1) >= 0.5;
  const labels = markerLabels(m, high);
  if (m.dalyH !== null && labels.daly) {
    markLines.push({
      name: DALY_NAME,
      xAxis: m.dalyH,
      lineStyle: { color: dalyColor, type: "dashed", width: 2 },
      label: { show: labels.daly.show, formatter: labels.daly.text, position: labels.daly.position, color: dalyColor,
        backgroundColor: bg, padding: [1, 3] },
    });
  }
  if (m.chosenH !== null && labels.chosen) {
    markLines.push({
      name: CHOSEN_NAME,
      xAxis: m.chosenH,
      lineStyle: { color: chosenColor, type: "solid", width: 2 },
      label: {
        formatter: labels.chosen.text,
        position: labels.chosen.position,
        color: chosenColor,
        backgroundColor: bg,
        padding: [1, 3],
      },
    });
  }

  const series: (LineSeriesOption | ScatterSeriesOption)[] = [
    {
      type: "line",
      name: CURVE_NAME,
      showSymbol: false,
      lineStyle: { width: 2.5 },
      itemStyle: { color: style.dark ? "#76b7b2" : "#2a7f62" },
      data: m.points,
      markLine: markLines.length ? { symbol: ["none", "none"], silent: true, animation: false, data: markLines } : undefined,
    },
  ];
  if (m.chosenH !== null && m.chosenGoodput !== null) {
    series.push({
      type: "scatter",
      name: CHOSEN_NAME,
      symbol: "circle",
      symbolSize: 10,
      z: 5,
      itemStyle: { color: chosenColor, borderColor: bg, borderWidth: 1.5 },
      data: [{ name: "Goodput at the chosen interval", value: [m.chosenH, m.chosenGoodput] }],
    });
  }
  if (m.monteCarlo && m.chosenH !== null) {
    const mc = m.monteCarlo;
    series.push({
      type: "scatter",
      name: MC_NAME,
      symbol: "diamond",
      // larger than the chosen point drawn over it, so both show when they coincide
      symbolSize: 17,
      z: 4,
      itemStyle: { color: mcColor, borderColor: ink, borderWidth: 1 },
      data: [{ name: `Monte-Carlo mean of ${mc.runs} runs`, value: [m.chosenH, mc.mean] }],
      markArea: {
        silent: true,
        itemStyle: { color: mcColor, opacity: 0.22, borderColor: mcColor, borderWidth: 1, borderType: "dashed" },
        label: { show: false },
        data: [[
          { name: `p5–p95 of ${mc.runs} runs`, coord: [m.chosenH / MC_SPAN, mc.p5] },
          { coord: [m.chosenH * MC_SPAN, mc.p95] },
        ]],
      },
    });
  }

  return {
    ...chartFrame(),
    legend: { top: 0 },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => goodputTooltipHTML(p, m, digits),
    },
    grid: { left: 10, right: 30, top: 56, bottom: 10, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "log",
      logBase: 10,
      min: xMin,
      max: xMax,
      name: INTERVAL_AXIS_NAME,
      nameLocation: "middle",
      nameGap: 28,
      // the ends are the curve's range padded, not round numbers: only the decades are labelled
      axisLabel: { formatter: intervalTick, showMinLabel: false, showMaxLabel: false },
      splitLine: { show: true, lineStyle: { opacity: 0.35 } },
      minorTick: { show: true },
      minorSplitLine: { show: true, lineStyle: { opacity: 0.12 } },
    },
    yAxis: {
      type: "value",
      min: yMin,
      max: yMax,
      name: GOODPUT_AXIS_NAME,
      nameTextStyle: { align: "left" },
      axisLabel: { formatter: (v: number) => `${formatNumber(v, digits)}%` },
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    series,
  };
}

/** Tooltip of a point: the interval in h/min and the goodput; the Monte-Carlo band for its marker. */
export function goodputTooltipHTML(p: unknown, m: GoodputMarks, digits = 2): string {
  const q = p as { seriesName?: string; value?: number[] };
  if (!q.value) return "";
  const [h, g] = q.value;
  const pct = (x: number) => `${formatNumber(x, digits + 1)}%`;
  const lines = [`<strong>${q.seriesName ?? ""}</strong>`, `Interval: ${hoursText(h)}`];
  if (q.seriesName === MC_NAME && m.monteCarlo) {
    lines.push(`Mean goodput: ${pct(m.monteCarlo.mean)}`, `p5–p95: ${pct(m.monteCarlo.p5)} – ${pct(m.monteCarlo.p95)}`,
      `${m.monteCarlo.runs} simulated runs`);
  } else {
    lines.push(`Goodput: ${pct(g)}`);
  }
  return lines.join("<br>");
}
