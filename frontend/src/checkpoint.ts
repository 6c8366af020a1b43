// Pure helpers that read the checkpoint part of an engine report for display: the facts
// table (sizes in GB and GiB, times in s and h/min, goodput in %) and the waste split.

import type { Checkpoint, Report } from "./types";
import { formatBytes, formatDuration, formatGBps, formatNumber, formatPercent, formatSeconds, plural } from "./units";

export const TARGET_LABELS: Record<string, string> = {
  local_nvme: "local NVMe",
  remote_dram: "a peer node's DRAM over RDMA",
  cxl_pool: "a CXL memory pool",
  parallel_fs: "the parallel file system",
  object_store: "an object store",
  gds_nvme: "local NVMe through GPUDirect Storage",
};

export const METHOD_LABELS: Record<string, string> = {
  blocking: "blocking (training waits for the write)",
  async: "async (snapshot, then write in the background)",
  in_memory_then_flush: "in-memory copy to a peer, flushed to the target now and then",
};

export const WASTE_LABELS: Record<string, string> = {
  checkpoint: "writing checkpoints (stall)",
  rework: "redoing work lost since the last checkpoint",
  restart: "restarts (detect, reload, warm-up)",
};

export interface FactRow {
  name: string;
  value: string;
  note: string;
}

const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** "1 h 23 min (4,984 s)". */
export function durationWithSeconds(s: number): string {
  return s >= 60 && s < 2 * 86400 ? `${formatDuration(s)} (${formatNumber(s, 0)} s)` : formatDuration(s);
}

/** The checkpoint report as rows of name, value (with units) and a note. */
export function checkpointRows(report: Report): FactRow[] {
  const ck = report.checkpoint;
  if (!ck) return [];
  const rows: FactRow[] = [];
  const add = (name: string, value: string, note = "") => rows.push({ name, value, note });
  const spec = (ck.spec ?? {}) as Record<string, unknown>;
  const target = ck.target;

  const where = target ? TARGET_LABELS[target.kind] ?? target.kind : String(spec.target ?? "");
  const rate = target && num(target.write_bytes_per_s)
    ? ` at ${formatGBps(target.write_bytes_per_s)} write${target.scope === "cluster" ? " (shared by the cluster)" : " per node"}`
    : "";
  add("Target", `${where}${rate}`, target?.source ?? "");
  if (typeof spec.method === "string") add("Method", METHOD_LABELS[spec.method] ?? spec.method);

  const content = spec.content === "weights_only" ? "weights only" : "model states (weights, master weights, optimizer states)";
  const extras = [
    spec.sharded === false ? "one writer" : "sharded",
    num(spec.differential_fraction) && spec.differential_fraction < 1 ? `differential ${formatPercent(spec.differential_fraction as number, 0)}` : "",
    num(spec.quantize_bits) ? `fp32 states in ${spec.quantize_bits} bits` : "",
  ].filter(Boolean).join(", ");
  add("Size", formatBytes(ck.size_bytes), `${content}; ${extras}`);
  if (num(ck.full_size_bytes) && ck.full_size_bytes !== ck.size_bytes) {
    add("Full size (read back on restart)", formatBytes(ck.full_size_bytes));
  }
  if (num(ck.shard_bytes)) {
    const writers = ck.size?.writers;
    add("Shard per rank", formatBytes(ck.shard_bytes), num(writers) ? plural(writers, "writer") : "");
  }
  if (num(ck.snapshot_s)) add("Snapshot (HBM → host)", formatSeconds(ck.snapshot_s));
  if (num(ck.write_s)) add("Write to the target", formatSeconds(ck.write_s));
  if (num(ck.replicate_s) && ck.replicate_s > 0) add("Copy to a peer", formatSeconds(ck.replicate_s));
  add("Stall per checkpoint", formatSeconds(ck.stall_s), "time training waits for each checkpoint");
  if (num(ck.background_s) && ck.background_s > 0) add("Background write", formatSeconds(ck.background_s), "overlaps training");

  const source = ck.interval_source === "daly" ? "Daly's optimum, rounded to whole steps" : ck.interval_source === "given" ? "given in the scenario" : ck.interval_source ?? "";
  add("Interval", durationWithSeconds(ck.interval_s),
    [num(ck.interval_steps) ? `every ${formatNumber(ck.interval_steps, 0)} step${ck.interval_steps === 1 ? "" : "s"}` : "", source].filter(Boolean).join("; "));
  if (num(ck.daly_interval_s)) add("Best interval (Daly 2006)", durationWithSeconds(ck.daly_interval_s), "higher-order optimum");
  if (num(ck.young_interval_s)) add("Best interval (Young 1974)", durationWithSeconds(ck.young_interval_s), "√(2 × checkpoint cost × MTBF)");
  if (num(ck.mtbf_s)) {
    add("MTBF of the job", durationWithSeconds(ck.mtbf_s),
      num(ck.gpu_failure_rate_per_hour) ? `${formatNumber(ck.gpu_failure_rate_per_hour * 1e6, 2)} failures per million GPU-hours` : "");
  }
  if (num(ck.restart_s)) {
    const r = ck.restart ?? {};
    const parts = [
      num(r.detect_s) ? `detect ${formatDuration(r.detect_s)}` : "",
      num(r.reload_s) ? `reload ${formatDuration(r.reload_s)}` : "",
      num(r.warmup_s) ? `warm-up ${formatDuration(r.warmup_s)}` : "",
    ].filter(Boolean).join(" + ");
    add("Restart", durationWithSeconds(ck.restart_s), parts);
  }
  add("Goodput", formatPercent(ck.goodput, 2), "useful work / wall time, with failures and restarts");
  if (num(ck.waste_fraction)) add("Waste", formatPercent(ck.waste_fraction, 3), wasteText(ck));
  const mc = ck.monte_carlo;
  if (mc) {
    add("Goodput, Monte-Carlo", `${formatPercent(mc.mean_goodput, 2)} mean`,
      `p5 ${formatPercent(mc.p5, 2)}, p50 ${formatPercent(mc.p50 ?? mc.mean_goodput, 2)}, p95 ${formatPercent(mc.p95, 2)} over ${mc.runs} runs` +
        (num(mc.run_length_s) ? ` of ${formatDuration(mc.run_length_s)}` : ""));
  }
  const slow = ck.training_slowdown;
  if (slow) {
    add("Training slowdown while writing", `${formatSeconds(slow.per_step_s)} per step`,
      `${slow.steps_overlapped} step${slow.steps_overlapped === 1 ? " overlaps" : "s overlap"} the write: ${formatSeconds(slow.per_checkpoint_s)} per checkpoint` +
        (slow.note ? ` (${slow.note})` : ""));
  }
  const t = ck.traffic ?? {};
  if (num(t.nic_bytes_per_node) && t.nic_bytes_per_node > 0) {
    add("NIC traffic per checkpoint", `${formatBytes(t.nic_bytes_per_node)} per node`,
      num(t.mean_nic_bytes_per_s) ? `${formatNumber(t.mean_nic_bytes_per_s / 1e6, 1)} MB/s on average` : "");
  }
  return rows;
}

export interface WasteSlice {
  key: string;
  label: string;
  fraction: number;
}

/** The waste split into its parts, largest first. */
export function wasteSlices(ck: Checkpoint): WasteSlice[] {
  return Object.entries(ck.waste_parts ?? {})
    .filter(([, v]) => num(v))
    .map(([key, fraction]) => ({ key, label: WASTE_LABELS[key] ?? key, fraction }))
    .sort((a, b) => b.fraction - a.fraction);
}

/** "checkpoints 0.022%, rework 0.022%, restarts 0.004%". */
export function wasteText(ck: Checkpoint): string {
  return wasteSlices(ck).map((s) => `${s.label} ${formatPercent(s.fraction, 3)}`).join("; ");
}
