// The run page's sections for a recommendation model: where the embedding rows live (table,
// hit-rate and bytes-vs-capacity chart, lookups against dense compute) and parameter
// server vs all-to-all (summary, grouped bars, table). A report without `embedding` or
// `ps` gets none of them. Charts are drawn by mountRecsysCharts once the sections are in
// the page.

import "../styles/recsys.css";

import { mountChart, type ChartHandle } from "../charts/base";
import {
  BOUND_SHORT,
  boundPhrase,
  designLabel,
  embeddingChartOption,
  embeddingTierRows,
  embeddingTotals,
  formatGBShort,
  formatMsSig,
  formatUSD,
  hasEmbedding,
  showsPsSection,
  hasPsComparison,
  lookupOverlap,
  psChartOption,
  psDesignRows,
  psSummary,
  recsysParamBytesRows,
  trafficGB,
  type RecsysReport,
} from "../charts/recsys_series";
import { h } from "../dom";
import type { Report } from "../types";
import { formatBytesPerParam, formatCount, formatGB, formatGiB, formatNumber, formatPercent } from "../units";

type Cell = string | Node;

function table(id: string, caption: string, head: Cell[], rows: Cell[][], numeric: number[] = [], foot?: Cell[]) {
  const cls = (i: number) => (numeric.includes(i) ? "num" : null);
  const row = (r: Cell[], strong = false) =>
    h("tr", null, r.map((cell, i) => {
      const content = strong && typeof cell === "string" && cell ? h("strong", null, cell) : cell;
      return i === 0 ? h("th", { scope: "row", class: cls(i) }, content) : h("td", { class: cls(i) }, content);
    }));
  return h(
    "div",
    { class: "overflow-auto" },
    h(
      "table",
      { id, class: "striped" },
      h("caption", null, caption),
      h("thead", null, h("tr", null, head.map((t, i) => h("th", { scope: "col", class: cls(i) }, t)))),
      h("tbody", null, rows.map((r) => row(r))),
      foot ? h("tfoot", null, row(foot, true)) : null,
    ),
  );
}

/** A column head with its unit on a second line: "Stored" / "(GB, GiB)". */
const unitHead = (label: string, unit: string) => h("span", null, label, h("br"), h("small", { class: "unit" }, `(${unit})`));

const stat = (label: string, value: string, id: string, note?: string) =>
  h("div", { class: "stat", id }, h("small", null, label), h("strong", null, value), note ? h("small", null, note) : null);

const OPTIMIZER_WORDS: Record<string, string> = { sgd: "SGD", adagrad: "Adagrad", rowwise_adagrad: "row-wise Adagrad" };

/** Lookups against dense compute: two bars on one time scale, hidden and exposed parts. */
function overlapBlock(report: RecsysReport): HTMLElement | null {
  const o = lookupOverlap(report);
  if (!o) return null;
  const scale = Math.max(o.denseS, o.lookupS) || 1;
  const w = (s: number) => `${formatNumber((s / scale) * 100, 2)}%`;
  // A narrow segment shows only its time; the title has the words.
  const seg = (cls: string, s: number, text: string, word = "") =>
    s > 0
      ? h("span", { class: cls, style: `width: ${w(s)}`, title: `${text}${word}` },
          s / scale >= 0.3 ? `${text}${word}` : s / scale >= 0.1 ? text : "")
      : null;
  return h(
    "div",
    { id: "embedding-overlap" },
    h("h3", null, "Lookups against dense compute"),
    h("div", { class: "stats" },
      stat("Lookup time", formatMsSig(o.lookupS), "embedding-lookup-time", "per step, all tiers"),
      stat("Dense compute", formatMsSig(o.denseS), "embedding-dense-time", "per step (MLPs, interaction)"),
      stat("Hidden", formatMsSig(o.hiddenS), "embedding-hidden-time", `${formatPercent(o.hiddenFraction, 0)} of the lookups`),
      stat("Exposed", formatMsSig(o.exposedS), "embedding-exposed-time", o.exposedS > 0 ? "adds to the step" : "nothing waits"),
    ),
    h("div", {
      class: "overlap-bars",
      role: "img",
      "aria-label": `Dense compute ${formatMsSig(o.denseS)}; lookups ${formatMsSig(o.lookupS)}, of which ${formatMsSig(o.hiddenS)} hidden and ${formatMsSig(o.exposedS)} exposed`,
    },
      h("small", null, "Dense compute"),
      h("div", { class: "overlap-track" }, seg("overlap-compute", o.denseS, formatMsSig(o.denseS))),
      h("small", null, "Embedding lookups"),
      h("div", { class: "overlap-track" },
        seg("overlap-hidden", o.hiddenS, formatMsSig(o.hiddenS), " hidden"),
        seg("overlap-exposed", o.exposedS, formatMsSig(o.exposedS), " exposed")),
      h("span", null),
      h("small", { class: "overlap-legend" },
        h("span", { class: "swatch overlap-hidden" }), "hidden behind dense compute ",
        h("span", { class: "swatch overlap-exposed" }), "exposed: adds to the step"),
    ),
    h("p", { id: "embedding-overlap-text" }, o.sentence),
  );
}

/** Where the embedding rows live: headline numbers, the chart, the table per tier, the notes. */
export function embeddingSection(report: RecsysReport): HTMLElement | null {
  if (!hasEmbedding(report)) return null;
  const e = report.embedding!;
  const rows = embeddingTierRows(report);
  const totals = embeddingTotals(report);
  const tables = e.tables?.length ?? null;
  const optimizer = totals.optimizer ? OPTIMIZER_WORDS[totals.optimizer] ?? totals.optimizer : null;

  const stats = h(
    "div",
    { class: "stats", id: "embedding-headline" },
    stat("Stored", formatGB(totals.bytes), "embedding-stored",
      totals.valueBytes !== null && totals.valueBytes !== totals.bytes
        ? `${formatGB(totals.valueBytes)} of values + ${optimizer ?? "optimizer"} state`
        : `${formatGiB(totals.bytes)}`),
    stat("Rows", formatCount(totals.rows), "embedding-rows",
      `${formatNumber(totals.rows, 0)}${tables !== null ? ` in ${tables} tables` : ""}`),
    totals.lookupsPerStep !== null
      ? stat("Lookups", `${formatCount(totals.lookupsPerStep)} per step`, "embedding-lookups", "rows read, all GPUs")
      : null,
    totals.costUsd !== null
      ? stat("Memory cost", formatUSD(totals.costUsd), "embedding-cost", "of the bytes stored, at assumed USD/GB")
      : null,
  );

  const fig = h(
    "figure",
    null,
    h("div", {
      id: "embedding-chart",
      class: "chart embedding-chart",
      role: "img",
      "aria-label": "Bar charts: share of lookups served per tier, and bytes stored per tier against its capacity",
    }),
    h("figcaption", null,
      "Left: the share of lookups each tier serves (%); the hottest rows (Zipf) go to the fastest tier. ",
      "Right: the bytes stored on each tier (rows with their optimizer state) in GB (1e9 bytes), over all its devices, ",
      "against its capacity (dashed frame); each tier has its own scale. Hover a bar for GiB, rows and lookup time."),
  );

  const cap = (r: (typeof rows)[number]) => (r.capacityBytes !== null ? formatGB(r.capacityBytes) : "no limit");
  const tbl = table(
    "embedding-table",
    "Embedding rows per tier, over all its devices (GB = 1e9 bytes, GiB = 2^30 bytes; ms per training step)",
    ["Tier", "Rows", unitHead("Stored", "GB, GiB"), unitHead("Capacity", "GB"), unitHead("Used", "%"),
      unitHead("Hit rate", "% of lookups"), unitHead("Lookup", "ms per step"), unitHead("Cost", "USD")],
    rows.map((r) => [
      h("span", { class: "nowrap" }, r.label, h("br"), h("small", null, r.devicesText)),
      formatNumber(r.rows, 0),
      h("span", null, formatGB(r.bytes), h("br"), h("small", null, formatGiB(r.bytes))),
      cap(r),
      r.overBytes > 0
        ? h("strong", { class: "over" }, `over by ${formatGBShort(r.overBytes)}`)
        : r.used !== null ? formatPercent(r.used) : "—",
      formatPercent(r.hitRate),
      h("span", null, formatMsSig(r.lookupS), r.bound !== "none" ? [h("br"), h("small", null, `${BOUND_SHORT[r.bound] ?? r.bound}-bound`)] : null),
      r.costUsd !== null ? formatUSD(r.costUsd) : "—",
    ]),
    [1, 2, 3, 4, 5, 6, 7],
    [
      h("span", { class: "nowrap" }, "All tiers"),
      formatNumber(totals.rows, 0),
      h("span", null, h("strong", null, formatGB(totals.bytes)), h("br"), h("small", null, formatGiB(totals.bytes))),
      totals.capacityBytes !== null ? formatGB(totals.capacityBytes) : "—",
      "",
      formatPercent(rows.reduce((s, r) => s + r.hitRate, 0)),
      totals.lookupS !== null
        ? h("span", null, h("strong", null, formatMsSig(totals.lookupS)), h("br"), h("small", null, "tiers overlap"))
        : "—",
      totals.costUsd !== null ? formatUSD(totals.costUsd) : "—",
    ],
  );
  const priced = rows.filter((r) => r.priceUsdPerGB !== null);
  const prices = priced.length
    ? h("p", { id: "embedding-prices" }, h("small", null,
        "Bound: what limits a tier's lookups — bandwidth (GB/s), IOPS (random reads/s) or latency (reads in flight). ",
        "Cost: the bytes stored × an assumed price per GB (",
        priced.map((r) => `${r.label} $${formatNumber(r.priceUsdPerGB as number, Number.isInteger(r.priceUsdPerGB) ? 0 : 2)}/GB`).join(", "),
        "); override recsys.tiers.<tier>.price_usd_per_gb."))
    : null;

  const check = e.sample_check;
  const checkText = check && typeof check.lookups_per_table === "number" && check.lookups_per_table > 0
    ? h("p", { id: "embedding-sample-check" }, h("small", null,
        `Hit rates checked by drawing ${formatNumber(check.lookups_per_table, 0)} lookups per table` +
        `${typeof check.seed === "number" ? ` (seed ${check.seed})` : ""}: the largest difference from the formula is ` +
        `${formatNumber((check.max_abs_error ?? 0) * 100, 2)} percentage points` +
        `${typeof check.max_z === "number" ? ` (z = ${formatNumber(check.max_z, 2)})` : ""}.`))
    : null;
  const slow = rows.filter((r) => r.lookupS > 0).reduce<(typeof rows)[number] | null>((a, r) => (r.lookupS > (a?.lookupS ?? 0) ? r : a), null);
  const slowText = slow
    ? h("p", { id: "embedding-slowest" },
        "Slowest tier: ", h("strong", null, slow.label),
        ` — ${formatPercent(slow.hitRate)} of lookups take ${formatMsSig(slow.lookupS)} per step, ${boundPhrase(slow.bound)}.`)
    : null;
  const notes = e.notes ?? [];
  return h(
    "section",
    { id: "embedding" },
    h("h2", null, "Embedding tables"),
    e.fits === false ? h("p", { class: "over", id: "embedding-overflow" }, h("strong", null, "The embedding rows do not fit in the tiers checked.")) : null,
    stats,
    fig,
    tbl,
    prices,
    slowText,
    checkText,
    overlapBlock(report),
    notes.length ? h("ul", { id: "embedding-notes", class: "notes" }, notes.map((n) => h("li", null, n))) : null,
  );
}

/** Parameter server vs all-to-all: which is faster in words, the grouped bars, the table, the notes. */
export function psSection(report: RecsysReport): HTMLElement | null {
  const ps = report.ps;
  if (!ps) return null;
  const notes = ps.notes ?? [];
  if (!hasPsComparison(report)) {
    if (!notes.length) return null;
    return h("section", { id: "ps" }, h("h2", null, "Parameter server vs all-to-all"),
      h("ul", { id: "ps-notes", class: "notes" }, notes.map((n) => h("li", null, n))));
  }
  const rows = psDesignRows(report);
  const summary = psSummary(report);
  const fig = h(
    "figure",
    null,
    h("div", {
      id: "ps-chart",
      class: "chart ps-chart",
      role: "img",
      "aria-label": "Grouped bars: step time in ms and bytes on the wire per step in GB, for each way of serving the embeddings",
    }),
    h("figcaption", null,
      "Two ways to serve the embedding rows, each with the dense all-reduce of the MLP gradients: a ",
      h("strong", null, "parameter server"), " (workers pull the rows they look up from server shards and push their gradients back) and ",
      h("strong", null, "all-to-all"), " (tables sharded over the GPUs, pooled embeddings exchanged forward and back). ",
      "Left: step time in ms; right: bytes on the wire per step in GB (1e9 bytes). Hover a bar for the traffic by kind."),
  );
  const tbl = table(
    "ps-table",
    "Each design's step and traffic (ms per step; GB = 1e9 bytes per step, all workers)",
    ["Design", "Step time (ms)", "Bytes on wire (GB)", "Between nodes (GB)", "Busiest link", "Traffic"],
    rows.map((r) => [
      r.faster ? h("span", null, r.label, " ", h("mark", null, "faster")) : r.label,
      formatMsSig(r.stepS),
      formatGB(r.bytesOnWire, 2),
      r.networkBytes !== null ? formatGB(r.networkBytes, 2) : "—",
      r.busiest ? `${r.busiest.label}: ${formatMsSig(r.busiest.seconds)} of transfers` : "—",
      r.traffic.length ? h("small", null, r.traffic.map((t) => `${t.label} ${trafficGB(t.bytes)}`).join("; ")) : "—",
    ]),
    [1, 2, 3],
  );
  const step = report.step as (Report["step"] & { design?: string }) | undefined;
  return h(
    "section",
    { id: "ps" },
    h("h2", null, "Parameter server vs all-to-all"),
    summary ? h("p", { id: "ps-summary" }, h("strong", null, summary)) : null,
    step?.design ? h("p", null, h("small", null, `The step time above is the faster design's (${designLabel(step.design).toLowerCase()}).`)) : null,
    fig,
    tbl,
    notes.length ? h("ul", { id: "ps-notes", class: "notes" }, notes.map((n) => h("li", null, n))) : null,
  );
}

/** The report's sections for a recommendation model, as [anchor id, nav label, element]. */
export function recsysSections(report: Report): [string, string, HTMLElement][] {
  const r = report as RecsysReport;
  const out: [string, string, HTMLElement | null][] = [
    ["embedding", "Embeddings", embeddingSection(r)],
    ["ps", "PS vs all-to-all", showsPsSection(r) ? psSection(r) : null],
  ];
  return out.filter((s): s is [string, string, HTMLElement] => s[2] !== null);
}

/** Setup facts of a recommendation model: parameters split, batch in samples. */
export function recsysFacts(report: Report): [string, string][] {
  const r = report as RecsysReport;
  if (!hasEmbedding(r)) return [];
  const facts: [string, string][] = [];
  const m = r.model;
  if (typeof m?.embedding_params === "number" && typeof m.dense_params === "number") {
    facts.push(["Parameters", `${formatCount(m.embedding_params)} in embedding tables, ${formatCount(m.dense_params)} dense (MLPs)`]);
  }
  const p = r.parallelism;
  if (p?.global_batch_size) {
    const per = p.num_gpus ? `, ${formatNumber(p.global_batch_size / p.num_gpus, p.global_batch_size % p.num_gpus ? 1 : 0)} per GPU` : "";
    facts.push(["Batch", `${formatNumber(p.global_batch_size, 0)} samples per step${per}`]);
  }
  return facts;
}

/**
 * The Setup block's bytes per parameter for a recommendation model (in place of a
 * transformer's convention table): embedding rows as stored, dense MLP states.
 */
export function recsysBytesTable(report: Report): HTMLElement | null {
  const rows = recsysParamBytesRows(report as RecsysReport);
  if (!rows.length) return null;
  return table(
    "recsys-bytes-table",
    "Bytes per parameter of the recommendation model: embedding rows as stored (over all tiers), dense MLP states (per GPU)",
    ["Parameters", "Count", unitHead("Bytes per parameter", "B/param"), "What is counted"],
    rows.map((r) => [r.label, formatNumber(r.params, 0), formatBytesPerParam(r.bytesPerParam), r.detail]),
    [1, 2],
  );
}

/** Top-level notes that the embedding and PS sections do not already show. */
export function otherNotes(report: Report): string[] {
  const r = report as RecsysReport;
  const shown = new Set([...(r.embedding?.notes ?? []), ...(showsPsSection(r) ? r.ps?.notes ?? [] : [])]);
  return (report.notes ?? []).filter((n) => !shown.has(n));
}

/** Draws the recsys charts whose elements are on the page. */
export function mountRecsysCharts(report: Report, doc: Document = document): ChartHandle[] {
  const r = report as RecsysReport;
  const handles: ChartHandle[] = [];
  const charts: [string, (style: { dark: boolean }) => ReturnType<typeof embeddingChartOption>][] = [
    ["embedding-chart", (s) => embeddingChartOption(r, s)],
    ["ps-chart", (s) => psChartOption(r, s)],
  ];
  for (const [id, build] of charts) {
    const el = doc.getElementById(id);
    if (el) handles.push(mountChart(el, build));
  }
  return handles;
}
