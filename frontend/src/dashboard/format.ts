// Formatting of dashboard values: every number with its unit (GB and GiB both for bytes),
// column labels, and input values by the unit their key names. Pure: no DOM.

import { formatBytes, formatCount, formatNumber, formatPercent, formatSeconds } from "../units";
import type { Value } from "./types";

/** "$12.34/h", "$0.123 per 1M tokens": dollars with 2 decimals (3 under $1). */
export function formatUSD(usd: number): string {
  const digits = Math.abs(usd) < 1 ? 3 : 2;
  return `$${formatNumber(usd, digits)}`;
}

/** The memory verdict (`fit_state`) as the run page's headline starts it. */
export const FIT_STATE_WORDS: Record<string, string> = {
  fits: "Fits", tight: "Tight: it may not fit", does_not_fit: "Does not fit",
};

/** A table value in its unit; "—" when missing. */
export function formatValue(value: Value | undefined, unit: string): string {
  if (value === null || value === undefined) return "—";
  if (unit === "fit_state") return FIT_STATE_WORDS[String(value)] ?? String(value);
  if (typeof value === "boolean") return unit === "bool" ? (value ? "yes" : "no") : String(value);
  if (typeof value !== "number") return Array.isArray(value) ? value.join(", ") : String(value);
  switch (unit) {
    case "bytes":
      return formatBytes(value);
    case "s":
      return formatSeconds(value);
    case "fraction":
      // goodput near 100% needs two decimals to tell columns apart
      return formatPercent(value, value > 0.99 && value < 1 ? 2 : 1);
    case "tokens_per_s":
      return `${formatNumber(value, 0)} tokens/s`;
    case "usd_per_hour":
      return `${formatUSD(value)}/h`;
    case "usd_per_mtok":
      return `${formatUSD(value)} per 1M tokens`;
    case "count":
      return value >= 1e4 ? `${formatCount(value)} (${formatNumber(value, 0)})` : formatNumber(value, 0);
    default:
      return formatNumber(value, Number.isInteger(value) ? 0 : 3);
  }
}

/** The unit an input's key names: `*_bytes` bytes, `*_bytes_per_s` a bandwidth, `*_s` seconds. */
export function inputUnit(key: string): string {
  if (key.endsWith("_bytes_per_s")) return "bytes_per_s";
  if (key.endsWith("_bytes")) return "bytes";
  if (key.endsWith("_s")) return "s";
  if (key.startsWith("training.") && key.endsWith("_efficiency")) return "fraction";
  if (key.endsWith("price_usd_per_node_hour")) return "usd_per_hour";
  return "";
}

/** An input value, formatted by its key's unit. */
export function formatInput(key: string, value: Value | undefined): string {
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (/(^|[._])peak_flops/.test(key) && typeof value === "number") return `${formatNumber(value / 1e12, 1)} TFLOP/s`;
  const unit = inputUnit(key);
  if (unit === "bytes_per_s" && typeof value === "number") return `${formatNumber(value / 1e9, 1)} GB/s`;
  if (unit === "" && typeof value === "number") return formatNumber(value, Number.isInteger(value) ? 0 : 3);
  return formatValue(value, unit);
}

/** Column label: "1. Llama-2-70B ZeRO-3", cut to `max` characters with an ellipsis. */
export function columnLabel(position: number, name: string, max = 32): string {
  const text = `${position + 1}. ${name}`;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** What "best" means for a row, for the table's legend: "lowest", "highest", "". */
export function betterWord(better: string, unit = ""): string {
  if (unit === "bool") return better === "max" ? "yes" : better === "min" ? "no" : "";
  if (unit === "fit_state") return better ? "fits" : "";
  return better === "min" ? "lowest" : better === "max" ? "highest" : "";
}

/** A dotted scenario path as words: "strategy.offload_optimizer" -> "strategy › offload optimizer". */
export function pathLabel(path: string): string {
  return path.split(".").map((p) => p.replace(/_/g, " ")).join(" › ");
}

/**
 * A table value cut where it may wrap, each piece kept on one line: "85.1 GB (79.3 GiB)" ->
 * ["85.1 GB", "(79.3 GiB)"], "$1.50 per 1M tokens" -> ["$1.50", "per 1M tokens"]. A number
 * never leaves its unit; a narrow column shows the pieces one under the other.
 */
export function valuePieces(text: string): string[] {
  return text.split(/ (?=\(|per )/);
}

/**
 * A dotted path in pieces that end in their dot, for a line break (<wbr>) after each dot
 * and nowhere else: "cluster.num_nodes" -> ["cluster.", "num_nodes"]. (A <wbr>, unlike a
 * zero-width space, is not copied with the key.)
 */
export function pathPieces(path: string): string[] {
  return path.split(/(?<=\.)/);
}
