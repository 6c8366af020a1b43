// What a reader changed on a drawn chart — the dataZoom window, the series hidden from the
// legend — read from the chart's current option, and put back into a freshly built one.
// The base wrapper redraws a chart from scratch when the colour scheme changes; this keeps
// a zoomed timeline zoomed. Pure; no ECharts runtime.

/** A dataZoom window in percent of the axis (0..100). */
export interface ZoomWindow {
  start: number;
  end: number;
}

export interface ViewState {
  /** One per dataZoom component, in order; null where it had no window. */
  zoom: (ZoomWindow | null)[];
  /** The first legend's selection: series name -> shown. */
  legend: Record<string, boolean> | null;
}

type Obj = Record<string, unknown>;
const list = (x: unknown): unknown[] => (x === undefined || x === null ? [] : Array.isArray(x) ? x : [x]);
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null;
const pct = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);

/** The zoom windows and legend selection of `current` (what `chart.getOption()` returns). */
export function readViewState(current: unknown): ViewState {
  const o = isObj(current) ? current : {};
  const zoom = list(o.dataZoom).map((dz) =>
    isObj(dz) && pct(dz.start) && pct(dz.end) ? { start: dz.start, end: dz.end } : null);
  const first = list(o.legend)[0];
  const selected = isObj(first) && isObj(first.selected) ? first.selected : null;
  const legend = selected
    ? Object.fromEntries(Object.entries(selected).filter(([, v]) => typeof v === "boolean")) as Record<string, boolean>
    : null;
  return { zoom, legend: legend && Object.keys(legend).length ? legend : null };
}

/** Whether the reader changed anything worth keeping (a narrowed window, a hidden series). */
export function hasViewState(state: ViewState | null): state is ViewState {
  if (!state) return false;
  const zoomed = state.zoom.some((z) => z !== null && (z.start > 0 || z.end < 100));
  const hidden = Object.values(state.legend ?? {}).some((shown) => !shown);
  return zoomed || hidden;
}

/**
 * `option` with `state` put back: each dataZoom component gets its old window (by
 * position, percent of the axis, so it holds while the data is the same) and the first
 * legend its old selection. `option` itself is not changed.
 */
export function applyViewState<O extends object>(option: O, state: ViewState | null): O {
  if (!hasViewState(state)) return option;
  const out: Obj = { ...(option as Obj) };
  if (out.dataZoom !== undefined && state.zoom.length) {
    const many = Array.isArray(out.dataZoom);
    const zooms = list(out.dataZoom).map((dz, i) => {
      const w = state.zoom[i];
      if (!isObj(dz) || !w) return dz;
      // percent only: a startValue/endValue from the builder would win over it
      const { startValue: _s, endValue: _e, ...rest } = dz;
      return { ...rest, start: w.start, end: w.end };
    });
    out.dataZoom = many ? zooms : zooms[0];
  }
  if (out.legend !== undefined && state.legend) {
    const many = Array.isArray(out.legend);
    const legends = list(out.legend);
    if (isObj(legends[0])) {
      const old = isObj(legends[0].selected) ? legends[0].selected : {};
      legends[0] = { ...legends[0], selected: { ...old, ...state.legend } };
    }
    out.legend = many ? legends : legends[0];
  }
  return out as O;
}
