// A run's page at /runs/<id>/: polls the run until it succeeds or fails, then shows the
// engine's report: verdict, model, convention, memory per tier (chart and tables), notes.

import "../base";

import { ApiError, getJSON } from "../api";
import { bandwidthRows, tierMarks } from "../charts/bandwidth_series";
import { mountRunCharts } from "../charts/run_charts";
import { absentTiers } from "../charts/series";
import { ganttLayout, timelineHeight, timelineSummary } from "../charts/timeline_series";
import { checkpointRows, wasteSlices } from "../checkpoint";
import { h, replaceChildren } from "../dom";
import { BYTES_PER_PARAM_LABELS, crossCheckRows, expertsLine, partsRows, stageRows, tierSummaryRows, trainableLine, verdict } from "../report";
import {
  FIRST_RUN_POLL, TERMINAL_STATUSES as TERMINAL, formatElapsed, nextRunPoll, pollDelay, progressFraction,
  runElapsedSeconds, type RunPollState,
} from "../poll";
import { breakdownSegments, linkRows, mfuNote, partHelp, pipelineLine, stepBandText, stepHeadline, stepPhasesNote, stepVerdict } from "../step";
import type { Report, Run } from "../types";
import { isRecsysOnly, type RecsysReport } from "../charts/recsys_series";
import { mountRecsysCharts, otherNotes, recsysBytesTable, recsysFacts, recsysSections } from "./recsys_section";
import {
  formatBytesPerParam,
  formatCount,
  formatGB,
  formatGBps,
  formatGiB,
  formatNumber,
  formatParams,
  formatPercent,
  formatSeconds,
  formatSecondsSig,
  plural,
  formatTierBytes,
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

function chartFigure(id: string, label: string, caption: (string | Node | null)[], cls = "chart"): HTMLElement {
  return h(
    "figure",
    null,
    h("div", { id, class: cls, role: "img", "aria-label": label }),
    h("figcaption", null, ...caption),
  );
}

/** Step time: headline numbers, the verdict in words, the breakdown chart and table, the links. */
function stepSection(report: Report): HTMLElement | null {
  const head = stepHeadline(report);
  if (!report.step) return null;
  if (!head.available) {
    return h("section", { id: "step" }, h("h2", null, "Step time"),
      h("p", { id: "step-unavailable" }, `No step time: ${head.reason}`));
  }
  const stat = (label: string, value: string, id: string, note?: string) =>
    h("div", { class: "stat", id }, h("small", null, label), h("strong", null, value), note ? h("small", null, note) : null);
  const stats = h(
    "div",
    { class: "stats", id: "step-headline" },
    stat(report.fits === false ? "Step time if it fit" : "Step time", formatSeconds(head.timeS), "step-time",
      stepPhasesNote(head) || undefined),
    head.tokensPerS !== null
      ? stat("Throughput", `${formatNumber(head.tokensPerS, 0)} tokens/s`, "step-tokens",
          head.samplesPerS !== null ? `${formatNumber(head.samplesPerS, 2)} sequences/s` : undefined)
      : head.samplesPerS !== null
        ? stat("Throughput", `${formatCount(head.samplesPerS)} samples/s`, "step-samples", `${formatNumber(head.samplesPerS, 0)} samples/s`)
        : null,
    head.mfu !== null ? stat(head.mfuPrecision === "fp8" ? "MFU (FP8 peak)" : "MFU", formatPercent(head.mfu), "step-mfu", mfuNote(head)) : null,
  );
  const band = stepBandText(report);
  const bandEl = band
    ? h("div", { id: "step-band", class: "step-band" },
        h("p", null, h("strong", null, `${formatSeconds(head.timeS)} (${band.text})`), " — ", band.explain),
        band.outside ? h("p", { id: "step-outside", class: "warning" }, band.outside) : null)
    : null;
  const v = stepVerdict(report);
  const verdictEl = v
    ? h("article", { id: "step-verdict", class: "step-verdict", "data-bottleneck": v.bottleneck },
        h("p", null, h("strong", null, v.headline)),
        v.message ? h("p", null, v.message) : null)
    : null;

  const segs = breakdownSegments(report);
  const chart = chartFigure("step-chart", "Stacked bar of the step time by part, in seconds", [
    `Where the ${formatSeconds(head.timeS)} of a step go, in seconds; the parts add up to the step time. Hover a part for its share.`,
  ], "chart step-chart");
  const breakdown = table(
    "step-breakdown-table",
    "Step time by part (s, and % of the step)",
    ["Part", "Time (s)", "Share (%)", "What it is"],
    [
      ...segs.map((seg) => [seg.label, formatSecondsSig(seg.seconds), formatPercent(seg.fraction), partHelp(report, seg.key)]),
      [h("strong", null, "Step"), h("strong", null, formatSecondsSig(head.timeS)), formatPercent(1), ""],
    ],
    [1, 2],
  );
  const links = linkRows(report);
  const linksTable = links.length
    ? table(
        "links-table",
        "Links during the step, per GPU (GB = 1e9 bytes)",
        ["Link", "Bandwidth per GPU (GB/s)", "Moved per GPU (GB)", "Busy (s)", "Busy (% of step)", "Bandwidth used (% of capacity)"],
        links.map((l) => [
          l.bottleneck ? h("span", null, l.label, " ", h("mark", null, "bottleneck")) : l.label,
          formatGBps(l.bytesPerS),
          l.bytes !== null ? formatGB(l.bytes, 1) : "—",
          `${formatNumber(l.busyS, 2)} s`,
          formatPercent(l.utilization),
          l.bandwidthFraction !== null ? formatPercent(l.bandwidthFraction) : "—",
        ]),
        [1, 2, 3, 4, 5],
        [0],
      )
    : null;
  const unfit = report.fits === false
    ? h("p", { id: "step-unfit", class: "unfit-note", role: "note" },
        h("strong", null, "✗ As if it ran: "),
        "this scenario does not fit, so the run cannot start. The step time, throughput and checkpoint figures on this page are what it would take with enough memory.")
    : null;
  const pipe = pipelineLine(report);
  const pipeEl = pipe ? h("p", { id: "step-pipeline", class: "hint" }, pipe) : null;
  return h("section", { id: "step", "data-unfit": report.fits === false ? "true" : null },
    h("h2", null, "Step time"), unfit, stats, bandEl, verdictEl, chart, breakdown, pipeEl, linksTable);
}

/** The Gantt chart of the simulated micro-batch. */
function timelineSection(report: Report): HTMLElement | null {
  const layout = ganttLayout(report);
  if (!layout.items.length) return null;
  const fig = chartFigure("timeline-chart", "Gantt chart of the simulated micro-batch: tasks per stream and link over time", [
    `The step's last micro-batch as simulated, with the optimizer step: ${timelineSummary(layout)} `,
    "Overlapping flows on one link are drawn on thinner tracks. Drag the slider or scroll inside the chart to zoom; ",
    "click a legend entry to hide a kind; hover a task for its start, end and duration (ms, or a larger unit for a long task).",
    layout.truncated ? h("strong", null, " The engine cut the task list short: later tasks are not shown.") : null,
  ], "chart timeline-chart");
  const el = fig.querySelector<HTMLElement>("#timeline-chart");
  if (el) el.style.height = `${timelineHeight(layout)}px`;
  return h("section", { id: "timeline" }, h("h2", null, "Timeline of a micro-batch"), fig);
}

/** ZeRO-Infinity's efficiency vs offload bandwidth, with this node's tiers. */
function bandwidthSection(report: Report): HTMLElement | null {
  const ob = report.offload_bandwidth;
  if (!ob || !Object.keys(ob.curves ?? {}).length) return null;
  const tiers = tierMarks(report);
  const target = ob.target_efficiency;
  const fig = chartFigure("bandwidth-chart", "Training efficiency against offload bandwidth per GPU, one curve per kind of state", [
    "ZeRO-Infinity's analysis (Rajbhandari et al., SC'21, Sec. 4): the share of peak compute a GPU keeps when a kind of state ",
    "lives on a tier of this bandwidth per GPU (log scale). Dashed lines: this node's tiers",
    tiers.length ? ` (${tiers.map((t) => `${t.label} ${formatGBps(t.gbps * 1e9)}`).join(", ")} per GPU)` : "",
    typeof target === "number" ? `; dotted: the ${formatPercent(target, 0)} target.` : ".",
  ], "chart bandwidth-chart");
  const rows = bandwidthRows(report);
  const tbl = table(
    "bandwidth-table",
    "Bandwidth each kind of state needs (GB/s per GPU) and the efficiency it gets on this node's tiers (%)",
    ["State", "Intensity (FLOP/B)", typeof target === "number" ? `Needed for ${formatPercent(target, 0)} (GB/s)` : "Needed (GB/s)",
      ...tiers.map((t) => `On ${t.label} (%)`)],
    rows.map((r) => [r.label, r.intensity, r.needed, ...r.perTier]),
    [1, 2, ...tiers.map((_, i) => i + 3)],
    [0],
  );
  return h("section", { id: "offload-bandwidth" }, h("h2", null, "Offload bandwidth"), fig, tbl);
}

/** Checkpoint cost, interval and goodput. */
function checkpointSection(report: Report): HTMLElement | null {
  const ck = report.checkpoint;
  if (!ck || typeof ck.size_bytes !== "number") return null;
  const rows = checkpointRows(report);
  const tbl = table("checkpoint-table", "Checkpoint: size (GB = 1e9 bytes, GiB = 2^30 bytes), times, interval, goodput",
    ["", "Value", "Note"], rows.map((r) => [r.name, r.value, r.note]), [], [0]);
  const waste = wasteSlices(ck);
  const wasteEl = waste.length
    ? h("div", { id: "checkpoint-waste" },
        h("p", null, h("strong", null, `Wall time lost: ${formatPercent(ck.waste_fraction ?? 1 - ck.goodput, 3)}`), ", of which:"),
        h("ul", null, waste.map((w) => h("li", null, `${w.label}: ${formatPercent(w.fraction, 3)}`))))
    : null;
  const curve = ck.curve?.interval_s?.length
    ? chartFigure("goodput-chart", "Goodput against checkpoint interval, with the chosen interval and Daly's optimum", [
        "Goodput (useful work / wall time) against the checkpoint interval in hours (log scale): too often wastes time writing, ",
        "too rarely loses more work per failure. Solid line: the chosen interval; dashed: Daly's optimum",
        ck.monte_carlo ? `; the shaded box spans the p5–p95 goodput of ${ck.monte_carlo.runs} simulated runs around the chosen interval, the diamond their mean.` : ".",
      ], "chart goodput-chart")
    : null;
  const notes = ck.notes ?? [];
  return h(
    "section",
    { id: "checkpoint" },
    h("h2", null, "Checkpoint"),
    tbl,
    wasteEl,
    curve,
    notes.length ? h("ul", { id: "checkpoint-notes", class: "notes" }, notes.map((n) => h("li", null, n))) : null,
  );
}

/** A transformer's bytes per parameter, as its convention counts them. */
function conventionTable(conv: Report["convention"]): HTMLElement | null {
  const { dtypes, ...bpp } = conv?.bytes_per_param ?? {};
  if (!Object.keys(bpp).length) return null;
  const dtypeOf: Record<string, string | undefined> = { ...(dtypes ?? {}) };
  return table(
    "bytes-per-param-table",
    `Bytes per parameter counted by the ${conv?.name ?? ""} convention (before sharding)`,
    ["State", "Bytes per parameter"],
    Object.entries(bpp).map(([k, b]) => [
      (BYTES_PER_PARAM_LABELS[k] ?? k) + (dtypeOf[k] ? ` (${dtypeOf[k]})` : ""),
      formatBytesPerParam(b as number),
    ]),
    [1],
  );
}

function renderReport(report: Report, runUrl: string): HTMLElement {
  const v = verdict(report);
  const m = report.model ?? {};
  const p = report.parallelism ?? {};
  const conv = report.convention;

  const banner = h(
    "article",
    { id: "verdict", class: `verdict ${v.state === "tight" ? "verdict-tight" : v.fits ? "verdict-fits" : "verdict-overflow"}`,
      "data-fits": String(v.fits), "data-fit-state": v.state },
    h("h2", null, v.state === "tight" ? "⚠ " : v.fits ? "✓ " : "✗ ", v.headline),
    v.messages.length ? h("ul", null, v.messages.map((msg) => h("li", null, msg))) : null,
  );

  const facts: [string, string | Node][] = [];
  if (m.name || m.num_params) {
    facts.push(["Model", `${m.name ?? "custom"}${m.num_params ? ` — ${formatParams(m.num_params)}` : ""}`]);
  }
  const lora = trainableLine(m);
  if (lora) facts.push(["Trained", lora]);
  if (m.num_layers && m.hidden_size) facts.push(["Shape", `${m.num_layers} layers, hidden size ${formatNumber(m.hidden_size, 0)}`]);
  if (p.num_gpus) {
    facts.push([
      "GPUs",
      `${plural(p.num_gpus, "GPU")} = ${p.data_parallel ?? "?"} data-parallel × ${p.tensor_parallel ?? 1} tensor-parallel × ${p.pipeline_parallel ?? 1} pipeline` +
        (p.shard_degree && p.shard_degree > 1 ? `; states sharded over ${plural(p.shard_degree, "GPU")}`
          : p.shard_degree ? "; states not sharded" : ""),
    ]);
  }
  const experts = expertsLine(p, report.step?.expert_parallel
    ? report.step.expert_parallel.experts_per_rank * report.step.expert_parallel.expert_parallel : undefined);
  if (experts) facts.push(["Experts", experts]);
  const recsys = recsysFacts(report);
  if (p.global_batch_size && !recsys.length) {
    facts.push([
      "Batch",
      `${plural(p.global_batch_size, "sequence")} per step = ${p.micro_batch_size ?? "?"} per GPU × ${p.data_parallel ?? "?"} data-parallel × ${p.grad_accumulation_steps !== undefined ? plural(p.grad_accumulation_steps, "accumulation step") : "? accumulation steps"}`,
    ]);
  }
  facts.push(...recsys);
  // A recommendation model alone: the convention counts only its dense MLP states, and a
  // transformer's bytes per parameter do not apply to its embedding rows.
  const recsysOnly = isRecsysOnly(report as RecsysReport);
  if (conv && recsysOnly) facts.push(["Convention", `${conv.name}, for the dense MLP states`]);
  else if (conv) facts.push(["Convention", `${conv.name}${conv.description ? ` — ${conv.description}` : ""}`]);
  if (report.engine_version) facts.push(["Engine", `tierlab engine ${report.engine_version}, report schema ${report.schema}`]);

  const bppTable = recsysOnly ? recsysBytesTable(report) : conventionTable(conv);

  const tiers = tierSummaryRows(report);
  const tiersTable = table(
    "tiers-table",
    "Memory per tier: used and capacity (GPU memory in GiB = 2^30 bytes, as nvidia-smi and PyTorch show it; host memory and drives in GB = 10^9 or TB = 10^12 bytes, as their datasheets)",
    ["Tier", "Used", "Capacity", "Free", "Used (%)"],
    tiers.map((t) => {
      if (!t.present && t.totalBytes === 0) {
        return [t.label, "—", "none on this node", "—", "—"];
      }
      const show = (b: number) => formatTierBytes(b, t.tier);
      return [
        t.label,
        show(t.totalBytes),
        t.present ? show(t.capacityBytes) : "none on this node",
        t.fits ? show(t.freeBytes) : h("strong", { class: "over" }, `over by ${show(-t.freeBytes)}`),
        t.capacityBytes > 0 ? formatPercent(t.totalBytes / t.capacityBytes) : "—",
      ];
    }),
    [1, 2, 3, 4],
    [0],
  );

  const hbmUse = report.memory?.per_gpu?.hbm;
  const reservedNote =
    hbmUse && hbmUse.allocated_bytes !== undefined && hbmUse.total_bytes > 0
      ? h(
          "p",
          { id: "hbm-allocated-reserved", class: "hint" },
          `HBM per GPU at its peak (${(hbmUse.peak_phase ?? "").replace("_", " ")}): ` +
            `${formatGiB(hbmUse.total_bytes)} as nvidia-smi shows it (CUDA context + PyTorch's reserved memory), ` +
            `of which ${formatGiB(hbmUse.allocated_bytes)} are tensors (torch.cuda.max_memory_allocated).`,
        )
      : null;
  const absent = absentTiers(report);
  const chart = h("div", { id: "memory-chart", class: "chart memory-chart", role: "img", "aria-label": "Stacked bar chart of memory per tier by category, with capacity" });
  const figure = h(
    "figure",
    null,
    chart,
    h(
      "figcaption",
      null,
      "Memory per tier, stacked by category; the dashed frame is the tier's capacity. Each tier has its own scale: HBM in GiB (2^30 bytes, as nvidia-smi shows it), host memory and drives in GB or TB; hover a bar for both.",
      absent.length ? ` Not on this node: ${absent.map((t) => t.label).join(", ")}.` : "",
    ),
  );

  const stages = stageRows(report);
  const worstStage = report.memory?.stage_index;
  const stagesTable = stages.length
    ? table(
        "stages-table",
        `HBM per GPU on each pipeline stage (GiB = 2^30 bytes); the verdict is the worst stage's` +
          (worstStage !== undefined ? `: stage ${worstStage} (${report.memory?.stage ?? ""})` : ""),
        ["Stages", "Role", "Layers", "Micro-batches in flight", "Model states", "Activations", "HBM total", "Peak"],
        stages.map((r) => [
          r.worst ? h("strong", null, `${r.stages} (worst)`) : r.stages,
          r.role,
          String(r.layers),
          formatNumber(r.inFlight, r.inFlight % 1 ? 2 : 0),
          r.stateBytes === null ? "—" : formatGiB(r.stateBytes, 2),
          r.activationBytes === null ? "—" : formatGiB(r.activationBytes, 2),
          formatGiB(r.totalBytes, 2),
          r.phase,
        ]),
        [2, 3, 4, 5, 6],
        [0],
      )
    : null;

  const parts = partsRows(report);
  const partsTable = table(
    "parts-table",
    "Every part of every tier",
    ["Part", "Tier", "Category", "Phase", "Bytes (GB)", "Bytes (GiB)", "Note"],
    parts.map((r) => [r.name, r.where, r.categoryLabel, r.phaseLabel, formatGB(r.bytes, 2), formatGiB(r.bytes, 2), r.note]),
    [4, 5],
    [1],
  );

  const checks = crossCheckRows(report);
  const checksTable = checks.length
    ? table("cross-checks-table", "Other estimators' views of the same scenario (GB = 1e9 bytes, GiB = 2^30 bytes)",
        ["Estimate", "Bytes", "What it counts"], checks.map((r) => [r.name, r.value, r.note]), [1])
    : null;

  const notes = otherNotes(report);
  const sections: [string, string, HTMLElement | null][] = [
    ["step", "Step time", stepSection(report)],
    ...recsysSections(report),
    ["timeline", "Timeline", timelineSection(report)],
    ["memory", "Memory", h("section", { id: "memory" }, h("h2", null, "Memory per tier"), figure, tiersTable, reservedNote, stagesTable)],
    ["offload-bandwidth", "Offload bandwidth", bandwidthSection(report)],
    ["checkpoint", "Checkpoint", checkpointSection(report)],
    ["parts", "Parts", h("section", { id: "parts" }, h("h2", null, "Parts"), parts.length ? partsTable : h("p", { id: "parts-table" }, "The report lists no parts."))],
  ];
  const present = sections.filter(([, , el]) => el !== null);
  return h(
    "div",
    { id: "run-report" },
    banner,
    h("nav", { class: "report-nav", "aria-label": "Sections of the report" },
      h("ul", null, present.map(([id, label]) => h("li", null, h("a", { href: `#${id}` }, label))))),
    h("section", { id: "setup" }, h("h2", null, "Setup"), h("dl", { class: "facts" }, facts.flatMap(([k, val]) => [h("dt", null, k), h("dd", null, val)])), bppTable),
    present.map(([, , el]) => el),
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
  const cancelForm = document.getElementById("run-cancel-form");

  let pace: RunPollState = FIRST_RUN_POLL;
  let timer = 0;
  let ticker = 0;
  let done = false;
  // The run as last read, and since when (performance.now(), ms) this page has seen it at its
  // status: the elapsed time ticks from these between polls, the percentage changes on a poll.
  let last: Run | null = null;
  let seenSince = 0;
  let fractionText = "";

  const tick = () => {
    if (!last || TERMINAL.has(last.status)) return;
    const s = runElapsedSeconds(last, Date.now(), (performance.now() - seenSince) / 1000);
    const words = last.status === "running" ? "so far" : "waiting";
    elapsed.textContent = s === null ? "" : `(${formatElapsed(s)} ${words}${fractionText})`;
    elapsed.dataset.elapsedS = s === null ? "" : String(Math.floor(s));
  };

  const show = (run: Run) => {
    if (!last || last.status !== run.status) seenSince = performance.now();
    last = run;
    status.dataset.status = run.status;
    statusText.textContent = STATUS_TEXT[run.status] ?? run.status;
    if (pageStatus && !root.contains(pageStatus)) {
      pageStatus.textContent = run.status;
      pageStatus.className = `status status-${run.status}`;
    }
    // 0 is "nothing measured yet" (queued, or the first stage not done): an indeterminate
    // bar that moves, not one stuck at 0 %
    const measured = progressFraction(run.progress);
    const fraction = measured !== null && measured > 0 ? measured : null;
    if (TERMINAL.has(run.status)) {
      progress.hidden = true;
      const again = document.getElementById("run-again") as HTMLButtonElement | null;
      if (again) { again.disabled = false; again.removeAttribute("title"); }
      if (cancelForm) cancelForm.hidden = true; // nothing left to cancel
      const took = run.started_at && run.finished_at
        ? (Date.parse(run.finished_at) - Date.parse(run.started_at)) / 1000 : 0;
      elapsed.textContent = took > 0 ? `(took ${formatSeconds(took)})` : "";
      window.clearInterval(ticker);
    } else {
      if (fraction === null) progress.removeAttribute("value");
      else progress.value = Math.round(fraction * 100);
      progress.dataset.fraction = fraction === null ? "" : String(fraction);
      fractionText = fraction !== null ? `, ${formatPercent(fraction, 0)}` : "";
      tick();
      // between polls the elapsed time ticks here (a poll can be seconds away)
      if (!ticker) ticker = window.setInterval(tick, 250);
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
      mountRunCharts(run.result);
      mountRecsysCharts(run.result);
    }
  };

  // Paced by what the run does: at most ACTIVE_POLL_MS apart while it progresses, else
  // backing off to 5 s (poll.ts nextRunPoll); after an error, as pollDelay backs off.
  let failures = 0;
  const schedule = (run: Run | null) => {
    window.clearTimeout(timer);
    if (done) return;
    let delay: number;
    if (run) {
      failures = 0;
      const next = nextRunPoll(pace, run, performance.now(), document.hidden);
      pace = next.state;
      delay = next.delay;
    } else {
      delay = pollDelay(failures++, document.hidden);
    }
    timer = window.setTimeout(poll, delay);
  };

  let inFlight = false;
  async function poll() {
    if (inFlight) return;
    inFlight = true;
    let read: Run | null = null;
    try {
      const run = await getJSON<Run>(runUrl);
      problem.hidden = true;
      show(run);
      if (TERMINAL.has(run.status)) {
        done = true;
        window.clearInterval(ticker);
        return;
      }
      read = run;
    } catch (err) {
      problem.hidden = false;
      problem.className = "run-error";
      if (err instanceof ApiError && (err.status === 404 || err.status === 403 || err.status === 401)) {
        status.dataset.status = "unavailable";
        statusText.textContent = err.status === 404 ? "Not found" : "Not allowed";
        problem.textContent = `${err.message}`;
        progress.hidden = true;
        done = true;
        window.clearInterval(ticker);
        return;
      }
      problem.textContent = `Could not reach the server (${err instanceof Error ? err.message : String(err)}); retrying…`;
    } finally {
      inFlight = false;
    }
    schedule(read);
  }

  document.addEventListener("visibilitychange", () => {
    if (!document.hidden && !done) {
      pace = { ...pace, attempt: Math.min(pace.attempt, 2) };
      failures = Math.min(failures, 2);
      window.clearTimeout(timer);
      void poll();
    }
  });

  void poll();
}

const root = document.getElementById("run-result-root");
if (root) mount(root);
