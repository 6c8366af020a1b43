// A run's page at /runs/<id>/: polls the run until it succeeds or fails, then shows the
// engine's report: verdict, model, convention, memory per tier (chart and tables), notes.

import "../base";

import { ApiError, getJSON } from "../api";
import { mountMemoryChart } from "../charts/memory_chart";
import { absentTiers } from "../charts/series";
import { h, replaceChildren } from "../dom";
import { BYTES_PER_PARAM_LABELS, crossCheckRows, partsRows, tierSummaryRows, verdict } from "../report";
import { TERMINAL_STATUSES as TERMINAL, pollDelay, progressFraction } from "../poll";
import type { Report, Run } from "../types";
import {
  formatBytesPerParam,
  formatGB,
  formatGiB,
  formatNumber,
  formatParams,
  formatPercent,
  formatSeconds,
} from "../units";

const STATUS_TEXT: Record<string, string> = {
  queued: "Queued — waiting for a worker",
  pending: "Queued — waiting for a worker",
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
};

function table(
  id: string,
  caption: string,
  head: string[],
  rows: (string | Node)[][],
  numeric: number[] = [],
  nowrap: number[] = [],
) {
  const cls = (i: number) => [numeric.includes(i) ? "num" : "", nowrap.includes(i) ? "nowrap" : ""].join(" ").trim() || null;
  return h(
    "div",
    { class: "overflow-auto" },
    h(
      "table",
      { id, class: "striped" },
      h("caption", null, caption),
      h("thead", null, h("tr", null, head.map((t, i) => h("th", { scope: "col", class: cls(i) }, t)))),
      h("tbody", null, rows.map((r) => h("tr", null, r.map((cell, i) =>
        i === 0 ? h("th", { scope: "row", class: cls(i) }, cell) : h("td", { class: cls(i) }, cell))))),
    ),
  );
}

function renderReport(report: Report, runUrl: string): HTMLElement {
  const v = verdict(report);
  const m = report.model ?? {};
  const p = report.parallelism ?? {};
  const conv = report.convention;

  const banner = h(
    "article",
    { id: "verdict", class: `verdict ${v.fits ? "verdict-fits" : "verdict-overflow"}`, "data-fits": String(v.fits) },
    h("h2", null, v.fits ? "✓ " : "✗ ", v.headline),
    v.messages.length ? h("ul", null, v.messages.map((msg) => h("li", null, msg))) : null,
  );

  const facts: [string, string | Node][] = [];
  if (m.name || m.num_params) {
    facts.push(["Model", `${m.name ?? "custom"}${m.num_params ? ` — ${formatParams(m.num_params)}` : ""}`]);
  }
  if (m.num_layers && m.hidden_size) facts.push(["Shape", `${m.num_layers} layers, hidden size ${formatNumber(m.hidden_size, 0)}`]);
  if (p.num_gpus) {
    facts.push([
      "GPUs",
      `${p.num_gpus} GPUs = ${p.data_parallel ?? "?"} data-parallel × ${p.tensor_parallel ?? 1} tensor-parallel × ${p.pipeline_parallel ?? 1} pipeline` +
        (p.shard_degree ? `; states sharded over ${p.shard_degree} GPUs` : ""),
    ]);
  }
  if (p.global_batch_size) {
    facts.push([
      "Batch",
      `${p.global_batch_size} sequences per step = ${p.micro_batch_size ?? "?"} per GPU × ${p.data_parallel ?? "?"} data-parallel × ${p.grad_accumulation_steps ?? "?"} accumulation steps`,
    ]);
  }
  if (conv) facts.push(["Convention", `${conv.name}${conv.description ? ` — ${conv.description}` : ""}`]);
  if (report.engine_version) facts.push(["Engine", `tierlab engine ${report.engine_version}, report schema ${report.schema}`]);

  const bpp = conv?.bytes_per_param ?? {};
  const bppTable = Object.keys(bpp).length
    ? table(
        "bytes-per-param-table",
        `Bytes per parameter counted by the ${conv?.name ?? ""} convention (before sharding)`,
        ["State", "Bytes per parameter"],
        Object.entries(bpp).map(([k, b]) => [BYTES_PER_PARAM_LABELS[k] ?? k, formatBytesPerParam(b)]),
        [1],
      )
    : null;

  const tiers = tierSummaryRows(report);
  const tiersTable = table(
    "tiers-table",
    "Memory per tier: used and capacity (GB = 1e9 bytes, GiB = 2^30 bytes)",
    ["Tier", "Used (GB)", "Used (GiB)", "Capacity (GB)", "Capacity (GiB)", "Free (GB)", "Used (%)"],
    tiers.map((t) => {
      if (!t.present && t.totalBytes === 0) {
        return [t.label, "—", "—", "none on this node", "—", "—", "—"];
      }
      return [
        t.label,
        formatGB(t.totalBytes),
        formatGiB(t.totalBytes),
        t.present ? formatGB(t.capacityBytes) : "none on this node",
        formatGiB(t.capacityBytes),
        t.fits ? formatGB(t.freeBytes) : h("strong", { class: "over" }, `over by ${formatGB(-t.freeBytes)}`),
        t.capacityBytes > 0 ? formatPercent(t.totalBytes / t.capacityBytes) : "—",
      ];
    }),
    [1, 2, 3, 4, 5, 6],
    [0],
  );

  const absent = absentTiers(report);
  const chart = h("div", { id: "memory-chart", class: "memory-chart", role: "img", "aria-label": "Stacked bar chart of memory per tier by category, with capacity" });
  const figure = h(
    "figure",
    null,
    chart,
    h(
      "figcaption",
      null,
      "Memory per tier, stacked by category; the dashed frame is the tier's capacity. Each tier has its own scale in GB (1e9 bytes); hover a bar for GiB.",
      absent.length ? ` Not on this node: ${absent.map((t) => t.label).join(", ")}.` : "",
    ),
  );

  const parts = partsRows(report);
  const partsTable = table(
    "parts-table",
    "Every part of every tier",
    ["Part", "Tier", "Category", "Phase", "Bytes (GB)", "Bytes (GiB)", "Note"],
    parts.map((r) => [r.name, r.where, r.categoryLabel, r.phase, formatGB(r.bytes, 2), formatGiB(r.bytes, 2), r.note]),
    [4, 5],
    [1],
  );

  const checks = crossCheckRows(report);
  const checksTable = checks.length
    ? table("cross-checks-table", "Other estimators' views of the same scenario (GB = 1e9 bytes, GiB = 2^30 bytes)",
        ["Estimate", "Bytes", "What it counts"], checks.map((r) => [r.name, r.value, r.note]), [1])
    : null;

  const notes = report.notes ?? [];
  return h(
    "div",
    { id: "run-report" },
    banner,
    h("section", null, h("h2", null, "Setup"), h("dl", { class: "facts" }, facts.flatMap(([k, val]) => [h("dt", null, k), h("dd", null, val)])), bppTable),
    h("section", null, h("h2", null, "Memory per tier"), figure, tiersTable),
    h("section", null, h("h2", null, "Parts"), parts.length ? partsTable : h("p", { id: "parts-table" }, "The report lists no parts.")),
    checksTable ? h("section", { id: "cross-checks" }, h("h2", null, "Cross-checks"), checksTable) : null,
    notes.length ? h("section", { id: "notes" }, h("h2", null, "Notes"), h("ul", null, notes.map((n) => h("li", null, n)))) : null,
    h("p", null, h("small", null, h("a", { href: runUrl }, "This run as JSON"))),
  );
}

function mount(root: HTMLElement): void {
  const runId = root.dataset.runId ?? "";
  const runUrl = root.dataset.runUrl ?? `/api/v1/runs/${encodeURIComponent(runId)}/`;

  const statusText = h("strong", { id: "run-status-text" }, "Loading…");
  const elapsed = h("small", { id: "run-elapsed" });
  const progress = h("progress", { id: "run-progress", max: 100, "aria-label": "Run progress" });
  const problem = h("p", { id: "run-problem", hidden: true });
  const status = h(
    "article",
    { id: "run-progress-panel", "aria-live": "polite", "data-status": "loading" },
    h("p", null, "Status: ", statusText, " ", elapsed),
    progress,
    problem,
  );
  const body = h("div", { id: "run-body" });
  replaceChildren(root, status, body);
  // The page's server-rendered status line (run.html), kept in step with the poll.
  const pageStatus = document.getElementById("run-status");
  const pageError = document.getElementById("run-error");

  const started = performance.now();
  let attempt = 0;
  let timer = 0;
  let done = false;

  const show = (run: Run) => {
    status.dataset.status = run.status;
    statusText.textContent = STATUS_TEXT[run.status] ?? run.status;
    if (pageStatus && !root.contains(pageStatus)) {
      pageStatus.textContent = run.status;
      pageStatus.className = `status status-${run.status}`;
    }
    const fraction = progressFraction(run.progress);
    if (TERMINAL.has(run.status)) {
      progress.hidden = true;
      const took = run.started_at && run.finished_at
        ? (Date.parse(run.finished_at) - Date.parse(run.started_at)) / 1000 : 0;
      elapsed.textContent = took > 0 ? `(took ${formatSeconds(took)})` : "";
    } else {
      if (fraction === null) progress.removeAttribute("value");
      else progress.value = Math.round(fraction * 100);
      elapsed.textContent = `(${formatSeconds((performance.now() - started) / 1000)} so far${fraction !== null ? `, ${formatPercent(fraction, 0)}` : ""})`;
    }
    if (run.status === "failed") {
      if (pageError) pageError.hidden = true; // shown below instead, once
      problem.hidden = false;
      problem.className = "run-error";
      problem.textContent = run.error ? `Error: ${run.error}` : "The run failed without a message.";
    }
    if (run.status === "succeeded") {
      if (!run.result) {
        problem.hidden = false;
        problem.textContent = "The run succeeded but has no result.";
        return;
      }
      replaceChildren(body, renderReport(run.result, runUrl));
      const chartEl = document.getElementById("memory-chart");
      if (chartEl) mountMemoryChart(chartEl, run.result);
    }
  };

  const schedule = () => {
    window.clearTimeout(timer);
    if (done) return;
    timer = window.setTimeout(poll, pollDelay(attempt++, document.hidden));
  };

  let inFlight = false;
  async function poll() {
    if (inFlight) return;
    inFlight = true;
    try {
      const run = await getJSON<Run>(runUrl);
      problem.hidden = true;
      show(run);
      if (TERMINAL.has(run.status)) {
        done = true;
        return;
      }
    } catch (err) {
      problem.hidden = false;
      problem.className = "run-error";
      if (err instanceof ApiError && (err.status === 404 || err.status === 403 || err.status === 401)) {
        status.dataset.status = "unavailable";
        statusText.textContent = err.status === 404 ? "Not found" : "Not allowed";
        problem.textContent = `${err.message}`;
        progress.hidden = true;
        done = true;
        return;
      }
      problem.textContent = `Could not reach the server (${err instanceof Error ? err.message : String(err)}); retrying…`;
    } finally {
      inFlight = false;
    }
    schedule();
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !done) {
      attempt = Math.min(attempt, 2);
      window.clearTimeout(timer);
      void poll();
    }
  });

  void poll();
}

const root = document.getElementById("run-result-root");
if (root) mount(root);
