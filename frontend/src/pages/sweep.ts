// A sweep's page at /sweeps/<id>/ (and a shared sweep at /s/<token>/): a progress bar that
// moves as the worker's chunks finish points, a Cancel button, then the heatmap of a metric
// (chosen in a select that is kept in the URL, ?metric=...), the Pareto chart and a table
// of the points (the first TABLE_ROWS and more of the Pareto front; every point is in the
// CSV download linked below it). The charts fill in while the sweep runs.

import "../base";
import "../styles/dashboard.css";

import { ApiError } from "../api";
import { drawChart } from "../charts/dashboard_charts";
import { METRICS, heatmapHeight, heatmapOption, metricByKey, metricLabel, mfuHeading, mfuText, paretoGroups, paretoOption, pointClass,
  axisValueText, unplottedSummary, type Metric } from "../charts/sweep_series";
import type { ChartHandle } from "../charts/base";
import { FINISHED, cancelSweep, fetchSweep } from "../dashboard/api";
import { type Drawn, lightUrl, needsPoints } from "../dashboard/sweep_poll";
import { formatUSD, valuePieces } from "../dashboard/format";
import { type ProgressFields, sweepProgressText } from "../dashboard/sweep_progress";
import type { Sweep, SweepPoint } from "../dashboard/types";
import { h, replaceChildren } from "../dom";
import { pollDelay } from "../poll";
import { formatBytes, formatNumber, formatSeconds } from "../units";

const STATUS_TEXT: Record<string, string> = {
  queued: "Queued — waiting for a worker",
  running: "Running",
  succeeded: "Succeeded",        // the word the lists and the API use
  failed: "Failed",
  cancelled: "Cancelled",
};

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);
// a number keeps its unit on its line ("4.27 s", "14,602 tokens/s"): no-break spaces
const show = (v: unknown, f: (x: number) => string) => {
  const n = num(v);
  return n === null ? "—" : f(n).replace(/ /g, "\u00a0");
};

function outcome(p: SweepPoint, onFront: boolean): string {
  // a point the engine refused is a failed one (status failed, valid false): say invalid
  if (p.status === "failed" && p.valid === false) return `failed, invalid: ${p.error ?? ""}`;
  if (p.status !== "done") return p.status === "pending" ? "not yet run" : `${p.status}: ${p.error ?? ""}`;
  if (p.valid === false) return `invalid: ${p.error ?? ""}`;
  if (!p.fits) return `does not fit${p.violations?.length ? `: ${p.violations.join("; ")}` : ""}`;
  // "tight" as the run page says it: within the engine's memory error of the capacity
  const fit = p.fit_state === "tight" ? "tight: it may not fit" : "fits";
  return onFront ? `${fit} ◆ Pareto front` : fit;
}

/** Rows the points table shows, then at most as many more of the Pareto front (which keeps
 * points of equal cost and time: it may hold every point): a 10,000-point sweep's table
 * of every point was 1.5 M characters of text. */
export const TABLE_ROWS = 100;
/** Above this many points the charts draw on a canvas (ECharts' canvas renderer): one
 * element, not an SVG node per cell and point. */
const CANVAS_FROM_POINTS = 2000;

/** The points the table shows: all up to TABLE_ROWS, else the first TABLE_ROWS and the
 * first TABLE_ROWS points of the Pareto front after them, in index order. */
export function tablePoints(sweep: Sweep): SweepPoint[] {
  if (sweep.points.length <= TABLE_ROWS) return sweep.points;
  const front = new Set(sweep.pareto);
  let more = 0;
  return sweep.points.filter((p) => p.index < TABLE_ROWS || (front.has(p.index) && more++ < TABLE_ROWS));
}

function pointsTable(sweep: Sweep, url: string): HTMLElement {
  const front = new Set(sweep.pareto);
  const cls = (p: SweepPoint) => pointClass(p, METRICS[0]);
  const rows = tablePoints(sweep);
  const all = rows.length === sweep.points.length;
  const caption = all
    ? "Every point: its values, whether it fits, and its numbers (◆ on the cost / step-time Pareto front)."
    : `The first ${formatNumber(TABLE_ROWS, 0)} of ${formatNumber(sweep.points.length, 0)} points, then `
      + `${formatNumber(rows.length - TABLE_ROWS, 0)} more of the ${formatNumber(sweep.pareto.length, 0)} on the cost / `
      + "step-time Pareto front (◆): their values, whether they fit, and their numbers.";
  const region = h("div", { class: "overflow-auto", tabindex: 0, role: "region",
    "aria-label": all ? "Every point of the sweep" : "Points of the sweep" },
    h("table", { id: "sweep-table", class: "striped", "data-shown": rows.length, "data-total": sweep.points.length },
      h("caption", null, caption),
      h("thead", null, h("tr", null,
        h("th", { scope: "col" }, "#"),
        sweep.axes.map((ax) => h("th", { scope: "col" }, ax.label ?? ax.path)),
        h("th", { scope: "col" }, "Outcome"),
        // units are in the cells; short headings keep the table within the page
        h("th", { scope: "col", class: "num" }, "Step time"),
        h("th", { scope: "col", class: "num" }, "Throughput"),
        h("th", { scope: "col", class: "num" }, "Cost per hour"),
        h("th", { scope: "col", class: "num" }, "Cost per 1M tokens"),
        h("th", { scope: "col", class: "num" }, "HBM per GPU"),
        h("th", { scope: "col", class: "num" }, mfuHeading(sweep.points)))),
      h("tbody", null, rows.map((p) => h("tr", {
        "data-index": p.index, "data-status": p.status, "data-class": cls(p), "data-pareto": String(front.has(p.index)),
        class: front.has(p.index) ? "pareto" : null,
      },
        h("th", { scope: "row" }, String(p.index + 1)),
        sweep.axes.map((ax) => h("td", null, axisValueText(ax, p.values[ax.path]))),
        h("td", { class: cls(p) === "value" ? "outcome" : "outcome muted" }, outcome(p, front.has(p.index))),
        h("td", { class: "num" }, show(p.step_time_s, formatSeconds)),
        h("td", { class: "num" }, show(p.tokens_per_s, (v) => `${formatNumber(v, 0)} tokens/s`)),
        h("td", { class: "num" }, show(p.usd_per_hour, (v) => `${formatUSD(v)}/h`)),
        h("td", { class: "num" }, show(p.usd_per_million_tokens, (v) => formatUSD(v))),
        h("td", { class: "num" }, num(p.hbm_total_bytes) === null
          ? "—" : valuePieces(formatBytes(p.hbm_total_bytes as number)).flatMap((piece, i) => [
            // the space between the pieces, not inside one: a trailing space in an
            // inline-block is dropped ("160.7 GB(149.7 GiB)" when they share a line)
            i ? " " : "", h("span", { class: "piece" }, piece)])),
        h("td", { class: "num" }, mfuText(p).replace(/ /g, "\u00a0")))))));
  if (all) return region;
  // a sweep of yours or your team's has its CSV (/api/v1/sweeps/<id>/points.csv); a shared
  // one, its JSON (the share link's API answer, with every point)
  const csv = /^\/api\/v1\/sweeps\/\d+\/$/.test(url) ? `${url}points.csv` : "";
  return h("div", null, region, h("p", { id: "sweep-all-points", class: "hint" },
    `${formatNumber(sweep.points.length - rows.length, 0)} more points are not listed here; every point is in `,
    csv ? h("a", { href: csv, download: "" }, "the points as CSV")
      : h("a", { href: url, download: "sweep-points.json" }, "the sweep's JSON (its points list)"), "."));
}

function mount(root: HTMLElement): void {
  const url = root.dataset.url ?? "";
  const cancelUrl = root.dataset.cancelUrl ?? "";
  const params = new URLSearchParams(window.location.search);
  let metric: Metric = metricByKey(params.get("metric"));

  const statusText = h("strong", { id: "sweep-status" }, "Loading…");
  const progress = h("progress", { id: "sweep-progress", max: 100, value: 0, "aria-label": "Points finished",
    "aria-describedby": "sweep-progress-text" });
  const progressText = h("span", { id: "sweep-progress-text" });
  const problem = h("p", { id: "sweep-problem", class: "run-error", hidden: true });
  const cancel = h("button", { type: "button", id: "sweep-cancel", class: "secondary", hidden: true }, "Cancel the sweep");
  const panel = h("article", { id: "sweep-panel", "aria-live": "polite", "data-status": "loading" },
    h("p", null, "Status: ", statusText, " — ", progressText), progress, problem, cancel);

  const select = h("select", { id: "sweep-metric", name: "metric" },
    METRICS.map((m) => h("option", { value: m.key, selected: m.key === metric.key }, metricLabel(m))));
  const heatmapEl = h("div", { id: "sweep-heatmap", class: "dash-chart", role: "img",
    "aria-label": "Heatmap of the chosen metric over the sweep's grid" });
  const paretoEl = h("div", { id: "sweep-pareto", class: "dash-chart", role: "img",
    "aria-label": "Scatter chart of cost per million tokens against step time, with the Pareto front" });
  const unplotted = h("p", { id: "sweep-unplotted", class: "hint" });
  const tableHolder = h("section", { id: "sweep-points" });
  const charts = h("section", { id: "sweep-charts" },
    h("h2", null, "Heatmap"),
    h("label", { for: "sweep-metric" }, "Colour the grid by"), select,
    h("figure", null, heatmapEl, h("figcaption", null,
      "Each cell is one point, labelled with its value and unit where the cell is wide enough (hover a cell for its ",
      "numbers); green is better. Points that do not fit, are invalid, failed or were cancelled are grey and say so.")),
    h("h2", null, "Pareto: cost against step time"),
    h("figure", null, paretoEl, h("figcaption", null,
      "Cost per million tokens (USD) against step time (s). The red line joins the points no other feasible point beats on ",
      "both; grey crosses do not fit in memory.")),
    unplotted);
  replaceChildren(root, panel, charts, tableHolder);

  let latest: Sweep | null = null;
  let heat: ChartHandle | null = null;
  let builtWidth = 0;
  let pareto: ChartHandle | null = null;
  let attempt = 0;
  let timer = 0;
  let done = false;

  // the cell labels show when they fit the cells: the heatmap is built for the chart's width
  const heatBuilder = (sweep: Sweep) => (s: { dark: boolean }) => {
    builtWidth = heatmapEl.clientWidth;
    return heatmapOption(sweep, metric, { ...s, width: builtWidth });
  };

  const draw = (sweep: Sweep) => {
    const heatBuild = heatBuilder(sweep);
    const paretoBuild = (s: { dark: boolean }) => paretoOption(sweep, s);
    if (heat) heat.update(heatBuild as never);
    const renderer = sweep.total_points >= CANVAS_FROM_POINTS ? "canvas" : "svg";
    if (heat) heat.update(heatBuild as never);
    else heat = drawChart(heatmapEl, heatmapHeight(sweep), heatBuild, renderer);
    if (pareto) pareto.update(paretoBuild as never);
    else pareto = drawChart(paretoEl, 400, paretoBuild, renderer);
    const g = paretoGroups(sweep);
    const missing = unplottedSummary(g.unplotted, metric);
    unplotted.textContent = missing ? `Not on the Pareto chart (no step time or cost): ${missing}; see the table.` : "";
    replaceChildren(tableHolder, h("h2", null, "Points"), pointsTable(sweep, url));
  };

  /** The status, progress and cancel button, from the light form or the full one. */
  const renderStatus = (sweep: ProgressFields & Pick<Sweep, "error">, shared: boolean) => {
    panel.dataset.status = sweep.status;
    root.dataset.status = sweep.status;
    statusText.textContent = STATUS_TEXT[sweep.status] ?? sweep.status;
    const pct = Math.round(sweep.progress * 100);
    progress.value = pct;
    progress.dataset.value = String(pct);
    progressText.textContent = sweepProgressText(sweep);
    cancel.hidden = shared || !cancelUrl || FINISHED.has(sweep.status);
    problem.hidden = !sweep.error;
    problem.textContent = sweep.error;
  };

  let drawn: Drawn | null = null;
  let fullAt = 0;
  const render = (sweep: Sweep, shared: boolean) => {
    latest = sweep;
    drawn = { done_points: sweep.done_points, failed_points: sweep.failed_points, status: sweep.status };
    fullAt = Date.now();
    renderStatus(sweep, shared);
    draw(sweep);
  };
  const light = lightUrl(url);
  let polls = 0;
  let pointFetches = 0;

  const schedule = () => {
    window.clearTimeout(timer);
    if (!done) timer = window.setTimeout(poll, pollDelay(Math.min(attempt++, 3), document.hidden));
  };

  async function poll() {
    try {
      let data: Pick<Sweep, "status">;
      root.dataset.polls = String(++polls);
      const status = light ? (await fetchSweep(light)).data : null;
      if (!status || needsPoints(status, drawn, Date.now() - fullAt)) {
        const full = await fetchSweep(url);
        render(full.data, full.shared !== null || root.dataset.shared === "true");
        root.dataset.pointFetches = String(++pointFetches);
        data = full.data;
      } else {
        renderStatus(status, root.dataset.shared === "true");
        data = status;
      }
      if (FINISHED.has(data.status) && (!light || drawn?.status === data.status)) {
        done = true;
        root.dataset.ready = "true";
        return;
      }
    } catch (err) {
      if (err instanceof ApiError && [401, 403, 404, 410].includes(err.status)) {
        panel.dataset.status = "unavailable";
        statusText.textContent = err.message;
        done = true;
        return;
      }
      problem.hidden = false;
      problem.textContent = `Could not reach the server (${err instanceof Error ? err.message : String(err)}); retrying…`;
    }
    schedule();
  }

  // A wider or narrower window: the heatmap is built again for its new width (whether its
  // cell labels fit depends on it); the base wrapper only stretches what was drawn.
  let resizeFrame = 0;
  new ResizeObserver(() => {
    cancelAnimationFrame(resizeFrame);
    resizeFrame = requestAnimationFrame(() => {
      if (latest && heat && heatmapEl.clientWidth !== builtWidth) heat.update(heatBuilder(latest) as never);
    });
  }).observe(heatmapEl);

  select.addEventListener("change", () => {
    metric = metricByKey(select.value);
    const next = new URL(window.location.href);
    next.searchParams.set("metric", metric.key);
    window.history.replaceState(null, "", next);
    if (latest) draw(latest);
  });

  cancel.addEventListener("click", async () => {
    cancel.disabled = true;
    cancel.setAttribute("aria-busy", "true");
    try {
      render(await cancelSweep(cancelUrl), false);
      done = true;
    } catch (err) {
      problem.hidden = false;
      problem.textContent = err instanceof Error ? err.message : String(err);
      cancel.disabled = false;
    }
    cancel.removeAttribute("aria-busy");
    if (!done) schedule();
  });

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !done) {
      attempt = 0;
      window.clearTimeout(timer);
      void poll();
    }
  });

  void poll();
}

const root = document.getElementById("sweep-root");
if (root) mount(root);
