// Shapes of the dashboard's API: comparisons, sweeps, share links (see tierlab/dashboard).

import type { Report } from "../types";

/** How a table value is shown: the engine's SI unit, named. */
export type Unit =
  | "bytes"
  | "s"
  | "fraction"
  | "tokens_per_s"
  | "usd_per_hour"
  | "usd_per_mtok"
  | "count"
  | "bool"
  | "text";

export type Value = number | string | boolean | null | unknown[];

export interface OutputRow {
  key: string;
  label: string;
  unit: Unit | string;
  better: "min" | "max" | "";
  values: Value[];
  /** Columns holding the best value (chosen by the server, among the columns that fit). */
  best: number[];
  /** Columns whose value is a step time, throughput or cost of a scenario that does not fit. */
  unfit?: number[];
  /** The `fit_state` row: each column's verdict in the run page's words ("Tight: … it may not fit"). */
  labels?: (string | null)[];
}

export interface InputRow {
  key: string;
  values: Value[];
  differs: boolean;
  /** Display names of the values where they read otherwise ("ZeRO-3" for zero3), else null. */
  labels?: (string | null)[];
}

export interface ComparisonItem {
  position: number;
  name: string;
  scenario: number | null;
  run: number | null;
  status: string;
  progress: number;
  error: string;
  report: Report | null;
}

export interface Comparison {
  id: number | null;
  name: string;
  status: "running" | "succeeded" | "failed" | string;
  progress: number;
  items: ComparisonItem[];
  table: { inputs: InputRow[]; outputs: OutputRow[] };
  url?: string;
}

/** A value a sweep axis tries: a null is the field's null (FP8 off), an object a whole section. */
export type AxisValue = number | string | boolean | null | Record<string, unknown>;

export interface Axis {
  path: string;
  label?: string;
  values: AxisValue[];
  /** Display names of the values, where they differ from the value (null where not):
   * "off" for a null FP8, "default" for a null number, "recipe: delayed" for an object. */
  value_labels?: (string | null)[];
}

export interface SweepPoint {
  index: number;
  values: Record<string, AxisValue>;
  /** done: evaluated (a report); failed: invalid (valid false) or its evaluation or chunk failed. */
  status: "done" | "failed" | "cancelled" | "pending" | string;
  /** false: the engine refused the scenario; null: never judged (its chunk failed). */
  valid?: boolean | null;
  fits?: boolean;
  /** fits | tight (within the engine's memory error: it may not fit) | does_not_fit. */
  fit_state?: "fits" | "tight" | "does_not_fit" | null;
  error?: string;
  violations?: string[];
  hbm_total_bytes?: number | null;
  hbm_capacity_bytes?: number | null;
  step_time_s?: number | null;
  tokens_per_s?: number | null;
  /** MFU over the peak of the point's GEMMs (`mfu_peak_precision`: "16-bit", "fp8", "fp32"). */
  mfu?: number | null;
  mfu_peak_precision?: string | null;
  /** MFU over the dense 16-bit peak: the figure FP8 and 16-bit points compare by (null for fp32). */
  mfu_16bit_peak?: number | null;
  usd_per_hour?: number | null;
  usd_per_million_tokens?: number | null;
  goodput?: number | null;
  bottleneck?: string | null;
}

export interface Sweep {
  id: number | null;
  name: string;
  base: { id: number | null; name: string } | null;
  axes: Axis[];
  status: "queued" | "running" | "succeeded" | "failed" | "cancelled" | string;
  cancelled: boolean;
  /** 0..1: points evaluated or failed, of the total. */
  progress: number;
  /** Points evaluated (a report, fitting or not). */
  done_points: number;
  /** Points that failed: an invalid scenario, an evaluation that raised, a failed chunk. */
  failed_points?: number;
  /** The first failed point's index and error (naming the field); null when none failed. */
  first_failure?: { index: number; error: string } | null;
  /** Points cancelled before they ran (not in done_points). */
  cancelled_points?: number;
  total_points: number;
  chunks: number;
  points: SweepPoint[];
  pareto: number[];
  error: string;
}

/** The best candidate a plan's chunks have found so far (GET /api/v1/plans/<id>/ best_so_far). */
export interface PlanBest {
  index: number;
  choices: Record<string, unknown>;
  objective: number;
  step_time_s: number;
  usd_per_million_tokens: number | null;
}

/** A plan as GET /api/v1/plans/<id>/ returns it (what its page reads while it runs). */
export interface Plan {
  id: number | null;
  name: string;
  status: "queued" | "running" | "succeeded" | "failed" | "cancelled" | string;
  cancelled: boolean;
  progress: number;
  done: number;
  feasible: number;
  total_candidates: number;
  chunks: number;
  best_so_far: PlanBest | null;
  result: Record<string, unknown> | null;
  error: string;
}

export interface Shared<T> {
  kind: "scenario" | "comparison" | "sweep" | "plan";
  token: string;
  name: string;
  owner: string;
  created_at: string;
  data: T;
}
