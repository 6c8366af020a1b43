// The timeline (Gantt) of the simulated micro-batch: one row per lane (the GPU stream, each
// link or path of links), one rectangle per task, coloured by kind. Tasks that overlap in a
// lane (flows sharing a link) are stacked on thinner tracks inside the row so none hides
// another. Pure: only ECharts types are imported; renderItem clips by hand.

import type { CustomSeriesOption } from "echarts/charts";
import type {
  AriaComponentOption,
  DataZoomComponentOption,
  GridComponentOption,
  LegendComponentOption,
  TooltipComponentOption,
} from "echarts/components";
import type { ComposeOption } from "echarts/core";

import { linkLabel } from "../step";
import type { Report, TimelineTask } from "../types";
import { durationTickFormatter, durationUnit, formatMs, formatNumber, formatSeconds } from "../units";
import type { ChartStyle } from "./series";
import { zoomAxis, type ZoomAxis } from "./ticks";
import { escapeHtml as esc } from "../html";

export type TimelineChartOption = ComposeOption<
  | CustomSeriesOption
  | GridComponentOption
  | LegendComponentOption
  | TooltipComponentOption
  | DataZoomComponentOption
  | AriaComponentOption
>;

/** Task kinds in legend order, as words, with a colour each (Tableau 10). */
export const KIND_ORDER = [
  "compute",
  "allgather",
  "reduce_scatter",
  "allreduce",
  "tp_allreduce",
  "offload",
  "fetch_miss",
  "cpu_optimizer",
  "optimizer",
  "checkpoint",
] as const;

export const KIND_LABELS: Record<string, string> = {
  compute: "Compute",
  allgather: "All-gather",
  reduce_scatter: "Reduce-scatter",
  allreduce: "All-reduce",
  tp_allreduce: "Tensor-parallel all-reduce",
  offload: "Offload transfer",
  fetch_miss: "Prefetch miss",
  cpu_optimizer: "CPU optimizer",
  optimizer: "Optimizer step (GPU)",
  checkpoint: "Checkpoint",
};

export const KIND_COLORS: Record<string, string> = {
  compute: "#4e79a7",
  allgather: "#f28e2b",
  reduce_scatter: "#edc948",
  allreduce: "#b07aa1",
  tp_allreduce: "#ff9da7",
  offload: "#e15759",
  fetch_miss: "#9c755f",
  cpu_optimizer: "#59a14f",
  optimizer: "#76b7b2",
  checkpoint: "#bab0ac",
};

/** Lanes top to bottom: the GPU stream, then links from the GPU outwards. */
export const LANE_ORDER = [
  "gpu", "cpu", "nvlink", "nic", "pcie_h2d", "pcie_d2h", "ddr", "cxl", "cxl_read", "cxl_write",
  "nvme", "nvme_read", "nvme_write",
];

export const kindLabel = (kind: string) => KIND_LABELS[kind] ?? kind.replace(/_/g, " ");
export const kindColor = (kind: string) => KIND_COLORS[kind] ?? "#8c8c8c";

export const TIMELINE_AXIS_NAME = "Time since the micro-batch started (s)";

export interface GanttRow {
  lane: string;
  label: string;
  /** How many tasks of this lane overlap at most: the row is split into this many tracks. */
  tracks: number;
}

export interface GanttItem {
  /** Index of the task in the report's timeline. */
  index: number;
  row: number;
  track: number;
  start: number;
  end: number;
  kind: string;
  name: string;
  lane: string;
}

export interface GanttLayout {
  rows: GanttRow[];
  items: GanttItem[];
  /** Kinds present, in legend order. */
  kinds: string[];
  makespan: number;
  truncated: boolean;
}

/** "66 tasks on 1 lane (GPU stream), 320.9 ms in all." or "9 tasks on 6 lanes (the GPU stream and
 *  the links), 1.50 s in all.": the chart's caption, counts with their nouns in the singular for one. */
export function timelineSummary(layout: GanttLayout): string {
  const n = layout.items.length;
  const tasks = `${formatNumber(n, 0)} task${n === 1 ? "" : "s"}`;
  const lanes = layout.rows.length === 1
    ? `1 lane (${layout.rows[0].label})`
    : `${layout.rows.length} lanes (the GPU stream and the links)`;
  return `${tasks} on ${lanes}, ${formatSeconds(layout.makespan)} in all.`;
}

/** Where a lane sorts: its first link's place in LANE_ORDER; a path of links after that link. */
function laneRank(lane: string): number {
  const hops = lane.split(">").map((s) => s.trim());
  const i = LANE_ORDER.indexOf(hops[0]);
  return (i < 0 ? LANE_ORDER.length : i) + (hops.length > 1 ? 0.5 : 0);
}

/**
 * Rows (lanes in LANE_ORDER, unknown lanes after, each in order of first appearance) and
 * items (tasks placed on the first track of their row that is free at their start).
 */
export function ganttLayout(report: Report): GanttLayout {
  const tasks: TimelineTask[] = report.timeline?.tasks ?? [];
  const firstSeen = new Map<string, number>();
  tasks.forEach((t, i) => {
    if (!firstSeen.has(t.lane)) firstSeen.set(t.lane, i);
  });
  const lanes = [...firstSeen.keys()].sort(
    (a, b) => laneRank(a) - laneRank(b) || firstSeen.get(a)! - firstSeen.get(b)!,
  );
  const rowOf = new Map(lanes.map((l, i) => [l, i]));
  const items: GanttItem[] = [];
  const tracksOf = new Map<string, number>();
  for (const lane of lanes) {
    const mine = tasks
      .map((t, index) => ({ t, index }))
      .filter(({ t }) => t.lane === lane)
      .sort((a, b) => a.t.start_s - b.t.start_s || a.index - b.index);
    const trackEnds: number[] = [];
    for (const { t, index } of mine) {
      const eps = 1e-12 * Math.max(1, Math.abs(t.start_s));
      let track = trackEnds.findIndex((end) => end <= t.start_s + eps);
      if (track < 0) {
        track = trackEnds.length;
        trackEnds.push(t.end_s);
      } else {
        trackEnds[track] = t.end_s;
      }
      items.push({
        index, row: rowOf.get(lane)!, track, start: t.start_s, end: t.end_s, kind: t.kind, name: t.name, lane,
      });
    }
    tracksOf.set(lane, Math.max(1, trackEnds.length));
  }
  items.sort((a, b) => a.index - b.index);
  const present = new Set(tasks.map((t) => t.kind));
  const kinds = [
    ...KIND_ORDER.filter((k) => present.has(k)),
    ...[...present].filter((k) => !(KIND_ORDER as readonly string[]).includes(k)),
  ];
  const makespan = report.timeline?.makespan_s ?? tasks.reduce((m, t) => Math.max(m, t.end_s), 0);
  return {
    rows: lanes.map((lane) => ({ lane, label: linkLabel(lane), tracks: tracksOf.get(lane)! })),
    items,
    kinds,
    makespan,
    truncated: report.timeline?.truncated === true,
  };
}

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The part of `r` inside `box`, or null when nothing is left. */
export function clipRect(r: Rect, box: Rect): Rect | null {
  const x0 = Math.max(r.x, box.x);
  const y0 = Math.max(r.y, box.y);
  const x1 = Math.min(r.x + r.width, box.x + box.width);
  const y1 = Math.min(r.y + r.height, box.y + box.height);
  return x1 > x0 && y1 > y0 ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : null;
}

/** What renderItem needs of ECharts' api: value, coord and size (a fake one in tests). */
export interface RenderApi {
  value(dim: number): number | string;
  coord(point: number[]): number[];
  size?(value: number[]): number[] | number;
}

/** Share of a row's height that its tracks take (the rest separates rows). */
export const ROW_FILL = 0.72;

/**
 * A rectangle per task: x from start to end (at least 1 px wide so short tasks show), y
 * the task's track inside its row, clipped to the plot (so zoomed-out-of-view parts vanish).
 * Item values: [row, start_s, end_s, track, tracks, index].
 */
export function renderGanttItem(
  params: { coordSys: { x?: number; y?: number; width?: number; height?: number } },
  api: RenderApi,
  color: string,
) {
  const row = Number(api.value(0));
  const track = Number(api.value(3));
  const tracks = Math.max(1, Number(api.value(4)));
  const [x0, yMid] = api.coord([Number(api.value(1)), row]);
  const [x1] = api.coord([Number(api.value(2)), row]);
  const sized = api.size ? api.size([0, 1]) : 20;
  const rowHeight = Array.isArray(sized) ? sized[1] : sized;
  const band = rowHeight * ROW_FILL;
  const trackHeight = band / tracks;
  const gap = tracks > 1 ? Math.min(1, trackHeight * 0.15) : 0;
  const rect: Rect = {
    x: x0,
    y: yMid - band / 2 + track * trackHeight,
    width: Math.max(x1 - x0, 1),
    height: Math.max(trackHeight - gap, 1),
  };
  const cs = params.coordSys;
  const clipped = clipRect(rect, { x: cs.x ?? 0, y: cs.y ?? 0, width: cs.width ?? 0, height: cs.height ?? 0 });
  if (!clipped) return null;
  return { type: "rect" as const, transition: ["shape"], shape: clipped, style: { fill: color } };
}


/** A task's time: ms below a minute, then the unit that suits it ("1.5 h"). */
const taskTime = (s: number) => (Math.abs(s) < 60 ? formatMs(s) : formatSeconds(s));

/** Tooltip of one task: name, kind, lane, start, end and duration (ms, or a larger unit). */
export function taskTooltipHTML(item: GanttItem): string {
  return [
    `<strong>${esc(item.name)}</strong>`,
    `${esc(kindLabel(item.kind))} on ${esc(linkLabel(item.lane))}`,
    `Start: ${taskTime(item.start)}`,
    `End: ${taskTime(item.end)}`,
    `Duration: ${taskTime(item.end - item.start)}`,
  ].join("<br>");
}

/** Height in px the chart needs: ~34 px per lane (more when a lane has many tracks), plus legend and zoom slider. */
export function timelineHeight(layout: GanttLayout): number {
  const rows = layout.rows.reduce((sum, r) => sum + Math.min(3, Math.max(1, Math.sqrt(r.tracks))), 0);
  return Math.round(Math.max(2, rows) * 36 + 150);
}

/**
 * Labels of a time axis in seconds: as many decimals as the deepest zoom needs, trailing
 * zeros dropped ("0 s", "2.5 s", "12.345 s"), never the 6 digits of a window's raw edge.
 */
export function timeTickFormatter(axis: ZoomAxis | null): (v: number) => string {
  return durationTickFormatter(axis?.max ?? 0, axis?.decimals ?? 4);
}

/** The time axis's name in the unit its ticks read in: "Time since the micro-batch started (s)",
 *  "(days)" for a micro-batch of days, as its caption says it. */
export function timelineAxisName(axis: ZoomAxis | null, base = TIMELINE_AXIS_NAME): string {
  const unit = durationUnit(axis?.max ?? 0);
  return unit.seconds === 1 ? base : base.replace(/\(s\)$/, `(${unit.symbol})`);
}

/**
 * A Gantt chart of the timeline: y = lanes (category, top to bottom), x = seconds since the
 * micro-batch started, one custom series per task kind (so the legend toggles kinds), and
 * dataZoom (slider under the plot + wheel/drag inside it) on the time axis.
 */
export function timelineOption(report: Report, style: ChartStyle = {}): TimelineChartOption {
  const layout = ganttLayout(report);
  const series: CustomSeriesOption[] = layout.kinds.map((kind) => {
    const color = kindColor(kind);
    return {
      type: "custom",
      name: kindLabel(kind),
      color,
      renderItem: ((params: Parameters<typeof renderGanttItem>[0], api: RenderApi) =>
        renderGanttItem(params, api, color)) as unknown as CustomSeriesOption["renderItem"],
      encode: { x: [1, 2], y: 0, tooltip: [1, 2] },
      clip: true,
      data: layout.items
        .filter((it) => it.kind === kind)
        .map((it) => ({
          name: it.name,
          value: [it.row, it.start, it.end, it.track, layout.rows[it.row].tracks, it.index],
        })),
    };
  });
  const byIndex = new Map(layout.items.map((it) => [it.index, it]));
  const axis = zoomAxis(layout.makespan);
  const secondsTick = timeTickFormatter(axis);
  const muted = style.dark ? "#9aa4b2" : "#5c6370";
  return {
    backgroundColor: "transparent",
    animation: false,
    aria: { enabled: true, decal: { show: false } },
    legend: {
      top: 0,
      data: layout.kinds.map((k) => ({ name: kindLabel(k), itemStyle: { color: kindColor(k) } })),
    },
    tooltip: {
      trigger: "item",
      confine: true,
      formatter: (p: unknown) => {
        const value = (p as { value?: number[] }).value;
        const item = value ? byIndex.get(value[5]) : undefined;
        return item ? taskTooltipHTML(item) : "";
      },
    },
    grid: { left: 10, right: 30, top: 40, bottom: 48, outerBoundsMode: "same", outerBoundsContain: "all" },
    xAxis: {
      type: "value",
      name: timelineAxisName(axis),
      nameLocation: "middle",
      nameGap: 26,
      min: 0,
      max: axis?.max,
      maxInterval: axis?.interval,
      axisLabel: { formatter: secondsTick, hideOverlap: true },
      splitLine: { lineStyle: { opacity: 0.35 } },
    },
    yAxis: {
      type: "category",
      inverse: true,
      data: layout.rows.map((r) => r.label),
      axisTick: { show: false },
      axisLabel: { color: style.dark ? "#dfe3ea" : "#2d333b" },
      splitLine: { show: true, lineStyle: { opacity: 0.25 } },
    },
    dataZoom: [
      {
        type: "slider",
        xAxisIndex: 0,
        filterMode: "weakFilter",
        bottom: 8,                 // the handles stand taller than the bar: room so they are not clipped
        height: 22,
        showDataShadow: false,
        minValueSpan: axis?.minSpan,
        labelFormatter: secondsTick,
        textStyle: { color: muted },
      },
      { type: "inside", xAxisIndex: 0, filterMode: "weakFilter", minValueSpan: axis?.minSpan },
    ],
    series,
  };
}
