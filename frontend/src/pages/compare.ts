// The comparison page at /compare/<id>/ (and a shared comparison or scenario at /s/<token>/):
// follows the runs until every one has finished, then shows the table (inputs that differ
// highlighted, the best value of each output marked) and the charts side by side.

import "../base";
import "../styles/dashboard.css";

import { ApiError } from "../api";
import { columnColor, compareCostOption, compareGoodputOption, compareMemoryOption, compareStepOption,
  compareTimelineOption, memoryChartHeight, stepChartHeight, tierGroups, timelineChartHeight, timelinePanels,
  unusedTiers, type Column } from "../charts/compare_series";
import { drawChart } from "../charts/dashboard_charts";
import { FINISHED, fetchComparison } from "../dashboard/api";
import { betterWord, columnLabel, formatInput, formatValue, pathLabel, pathPieces, valuePieces } from "../dashboard/format";
import type { Comparison, ComparisonItem, InputRow, OutputRow } from "../dashboard/types";
import { h, replaceChildren } from "../dom";
import { UNFIT_NOTE } from "../report";
import { pollDelay } from "../poll";
import { formatPercent } from "../units";

/** The longest a scenario's name is in the table's header (it wraps; the charts cut at 32). */
const HEADER_CHARS = 90;

const STATUS_TEXT: Record<string, string> = {
  queued: "queued", running: "running", succeeded: "done", failed: "failed", missing: "no run",
};

function itemList(items: ComparisonItem[], shared: boolean): HTMLElement {
  return h("ol", { id: "compare-items", class: "compare-items" }, items.map((it) =>
    h("li", { "data-status": it.status },
      h("span", { class: "swatch", style: `background:${columnColor(it.position)}`, "aria-hidden": "true" }),
      !shared && it.run ? h("a", { href: `/runs/${it.run}/` }, it.name) : it.name,
      " — ",
      h("span", { class: `status status-${it.status}` }, STATUS_TEXT[it.status] ?? it.status),
      it.status === "failed" || it.status === "missing" ? h("span", { class: "run-error" }, `: ${it.error}`) : null)));
}

function outputRow(row: OutputRow): HTMLElement {
  const word = betterWord(row.better, row.unit);
  return h("tr", { "data-key": row.key },
    h("th", { scope: "row" }, row.label, word ? h("small", { class: "unit" }, ` (${word} is best)`) : null),
    row.values.map((v, i) => {
      const best = row.best.includes(i);
      const unfit = (row.unfit ?? []).includes(i);
      const mark = best
        ? h("span", { class: "best-mark", "aria-label": "best" }, "★ ")
        : unfit ? h("span", { class: "unfit-mark", title: UNFIT_NOTE, "aria-label": UNFIT_NOTE }, "✗ ") : null;
      return h("td", { class: `num${best ? " best" : ""}${unfit ? " unfit" : ""}`, "data-best": best ? "true" : null,
        "data-unfit": unfit ? "true" : null },
        pieces(row.labels?.[i] ?? formatValue(v as never, row.unit), mark));
    }));
}

/**
 * A value whose pieces ("85.1 GB", "(79.3 GiB)") wrap one under the other in a narrow
 * column; `mark` (the best value's ★) stays on the first piece's line.
 */
function pieces(text: string, mark: Node | null = null): (Node | string)[] {
  // a number and its unit stay on one line; a sentence (a verdict, what a band means) wraps
  return valuePieces(text).flatMap((piece, i) => [i ? " " : "",
    h("span", { class: piece.length > PIECE_MAX_CHARS ? "prose" : "piece" }, i ? null : mark, piece)]);
}

/** Longer than this, a piece is prose, not a value: it wraps between its words. */
const PIECE_MAX_CHARS = 20;

/** A name that wraps between its words only ("ZeRO-3" stays whole); a very long word may break. */
function words(text: string): (Node | string)[] {
  return text.split(" ").flatMap((word, i) => [i ? " " : "", word.length > 24 ? word : h("span", { class: "word" }, word)]);
}

function inputRow(row: InputRow): HTMLElement {
  // a long key breaks after a dot, never inside a name
  const key = pathPieces(row.key).flatMap((piece, i) => (i ? [h("wbr"), piece] : [piece]));
  return h("tr", { "data-key": row.key, class: row.differs ? "differs" : null, "data-differs": String(row.differs) },
    h("th", { scope: "row" }, h("code", null, key), h("small", { class: "unit" }, ` ${pathLabel(row.key)}`)),
    row.values.map((v, i) => typeof v === "number"
      ? h("td", { class: "num" }, pieces(formatInput(row.key, v as never)))
      : h("td", { class: "text", title: row.labels?.[i] ? String(v) : null },
        row.labels?.[i] ?? formatInput(row.key, v as never))));
}

function renderTable(data: Comparison, labels: string[], names: string[]): HTMLElement {
  const n = labels.length;
  const differ = data.table.inputs.filter((r) => r.differs);
  const same = data.table.inputs.filter((r) => !r.differs);
  const sameBody = h("tbody", { id: "inputs-same", hidden: true },
    h("tr", null, h("th", { scope: "colgroup", colspan: n + 1, class: "section" }, `Inputs that are the same (${same.length})`)),
    same.map(inputRow));
  const toggle = h("button", { type: "button", class: "secondary outline", id: "toggle-same", "aria-expanded": "false",
    "aria-controls": "inputs-same" }, `Show the ${same.length} inputs that are the same`);
  toggle.addEventListener("click", () => {
    const open = sameBody.hidden;
    sameBody.hidden = !open;
    toggle.setAttribute("aria-expanded", String(open));
    toggle.textContent = open ? "Hide the inputs that are the same" : `Show the ${same.length} inputs that are the same`;
  });
  const table = h("table", { id: "compare-table", class: "compare-table striped" },
    // the table's name for screen readers; the section's heading and the note say it on screen
    h("caption", { class: "visually-hidden" }, n > 1 ? `${n} scenarios side by side` : "Summary of the scenario"),
    // the scenarios' names wrap over lines (the charts, with less room, cut them short)
    h("thead", null, h("tr", null, h("th", { scope: "col", class: "quantity" }, "Quantity"),
      labels.map((l, i) => h("th", { scope: "col", class: "scenario", title: names[i] },
        h("span", { class: "swatch", style: `background:${columnColor(i)}`, "aria-hidden": "true" }), words(l))))),
    h("tbody", { id: "outputs" },
      h("tr", null, h("th", { scope: "colgroup", colspan: n + 1, class: "section" }, "Outputs")),
      data.table.outputs.map(outputRow)),
    h("tbody", { id: "inputs-differ" },
      h("tr", null, h("th", { scope: "colgroup", colspan: n + 1, class: "section" },
        differ.length ? `Inputs that differ (${differ.length})` : "No input differs")),
      differ.map(inputRow)),
    sameBody);
  // the note stays in view above the table, which may scroll sideways (5–8 columns)
  const note = h("p", { id: "compare-table-note", class: "hint" },
    "Outputs (★ best value of each row, among the scenarios that fit; no ★ where they are all equal; ✗ a step time or cost of a scenario that does not fit: what it would take if it fit) and the inputs that differ ",
    "(highlighted). Bytes in GB = 1e9 bytes and GiB = 2^30 bytes; times in the unit that suits them (s, min, h, days, years); costs in US dollars. ",
    "The measured-run band of a step time is where measured steps of that kind lay against tierlab's prediction for them, applied to this one: ",
    "it need not contain the step time (when every measured run of the kind took longer, it lies wholly above it; the row above it says by how much), as the run page says.");
  table.setAttribute("aria-describedby", "compare-table-note");
  return h("div", null, note,
    h("div", { class: "overflow-auto", tabindex: 0, role: "region", "aria-label": "Comparison table" }, table),
    same.length ? toggle : null);
}

interface ChartSpec {
  id: string;
  title: string;
  caption: string;
  label: string;
}

const CHARTS: ChartSpec[] = [
  { id: "cmp-memory-chart", title: "Memory per tier against capacity",
    caption: "Each tier on its own scale (HBM in GiB as nvidia-smi shows it; host memory and drives in GB or TB), stacked by category; the dashed frame is that scenario's capacity. Hover for both units.",
    label: "Stacked bars of memory per tier for each scenario, with capacity frames" },
  { id: "cmp-step-chart", title: "Step time",
    caption: "Seconds per training step, split into compute and the exposed (not hidden) communication, offload I/O and stalls.",
    label: "Stacked horizontal bars of step time per scenario" },
  { id: "cmp-timeline-chart", title: "Timelines of one micro-batch",
    caption: "One above the other on the same time axis (seconds); drag the slider to zoom all of them.",
    label: "Gantt timelines of the simulated micro-batch per scenario" },
  { id: "cmp-goodput-chart", title: "Checkpoint goodput",
    caption: "Goodput (useful work / wall time, %) against the checkpoint interval (hours, log scale); ◆ marks each scenario's chosen interval.",
    label: "Line chart of goodput against checkpoint interval per scenario" },
  { id: "cmp-cost-chart", title: "Cost",
    caption: "US dollars per hour for the whole cluster, and per million training tokens.",
    label: "Bar charts of cost per hour and cost per million tokens per scenario" },
];

function renderCharts(columns: Column[]): HTMLElement {
  const heights: Record<string, number> = {
    "cmp-memory-chart": memoryChartHeight(tierGroups(columns).length),
    "cmp-step-chart": stepChartHeight(columns.length),
    "cmp-timeline-chart": timelineChartHeight(timelinePanels(columns)),
    "cmp-goodput-chart": 380,
    "cmp-cost-chart": 340,
  };
  const builders: Record<string, (s: { dark: boolean }) => unknown> = {
    "cmp-memory-chart": (s) => compareMemoryOption(columns, s),
    "cmp-step-chart": (s) => compareStepOption(columns, s),
    "cmp-timeline-chart": (s) => compareTimelineOption(columns, s),
    "cmp-goodput-chart": (s) => compareGoodputOption(columns, s),
    "cmp-cost-chart": (s) => compareCostOption(columns, s),
  };
  const unused = unusedTiers(columns);
  const extra: Record<string, string> = {
    "cmp-memory-chart": unused.length ? ` Not used by any scenario: ${unused.map((t) => t.label).join(", ")}.` : "",
  };
  const section = h("section", { id: "compare-charts" }, h("h2", null, "Charts"));
  const todo: [HTMLElement, number, (s: { dark: boolean }) => unknown][] = [];
  for (const spec of CHARTS) {
    const el = h("div", { id: spec.id, class: "dash-chart", role: "img", "aria-label": spec.label });
    section.append(h("figure", null, h("h3", null, spec.title), el, h("figcaption", null, spec.caption, extra[spec.id] ?? "")));
    todo.push([el, heights[spec.id], builders[spec.id]]);
  }
  // Drawn once the section is in the page (ECharts needs the element's width).
  queueMicrotask(() => todo.forEach(([el, height, build]) => drawChart(el, height, build)));
  return section;
}

function mount(root: HTMLElement): void {
  const url = root.dataset.url ?? "";
  const statusText = h("strong", { id: "compare-status-text" }, "Loading…");
  const progress = h("progress", { id: "compare-progress", max: 100, "aria-label": "Runs finished" });
  const panel = h("article", { id: "compare-status", "aria-live": "polite", "data-status": "loading" },
    h("p", null, "Status: ", statusText), progress);
  const items = h("div", { id: "compare-items-holder" });
  const body = h("div", { id: "compare-body" });
  replaceChildren(root, panel, items, body);

  let attempt = 0;
  let drawn = false;

  const show = (data: Comparison, shared: boolean) => {
    panel.dataset.status = data.status;
    const labels = data.items.map((it) => columnLabel(it.position, it.name));
    replaceChildren(items, itemList(data.items, shared));
    if (!FINISHED.has(data.status)) {
      progress.hidden = false;
      progress.value = Math.round(data.progress * 100);
      const done = data.items.filter((it) => FINISHED.has(it.status)).length;
      statusText.textContent = `Running: ${done} of ${data.items.length} runs finished (${formatPercent(data.progress, 0)})`;
      return;
    }
    progress.hidden = true;
    statusText.textContent = data.status === "succeeded"
      ? (data.items.length === 1 ? "The run finished" : `All ${data.items.length} runs finished`)
      : "Finished; some runs failed (their columns are empty)";
    if (drawn) return;
    drawn = true;
    const columns: Column[] = data.items.map((it, i) => ({ label: labels[i], report: it.report }));
    const spec = (data as Comparison & { scenario?: unknown }).scenario;
    replaceChildren(body,
      h("section", { id: "compare-table-section" }, h("h2", null, data.items.length > 1 ? "Side by side" : "Summary"),
        renderTable(data, data.items.map((it) => columnLabel(it.position, it.name, HEADER_CHARS)),
          data.items.map((it) => it.name))),
      renderCharts(columns),
      spec ? h("details", { id: "scenario-json" }, h("summary", null, "Scenario JSON"),
        h("pre", { class: "json" }, JSON.stringify(spec, null, 2))) : null);
    root.dataset.ready = "true";
  };

  const poll = async () => {
    try {
      const { data, shared } = await fetchComparison(url);
      show(data, shared !== null || root.dataset.shared === "true");
      if (FINISHED.has(data.status)) return;
    } catch (err) {
      if (err instanceof ApiError && [401, 403, 404, 410].includes(err.status)) {
        panel.dataset.status = "unavailable";
        statusText.textContent = err.message;
        progress.hidden = true;
        return;
      }
      statusText.textContent = `Could not reach the server (${err instanceof Error ? err.message : String(err)}); retrying…`;
    }
    window.setTimeout(poll, pollDelay(attempt++, document.hidden));
  };
  void poll();
}

const root = document.getElementById("compare-root");
if (root) mount(root);
