// The words beside a sweep's progress bar, from GET /api/v1/sweeps/<id>/. Pure, so it is
// unit-tested in Node; pages/sweep.ts puts it on the page.

import { plural } from "../units";
import type { Sweep } from "./types";

const count = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

export type ProgressFields = Pick<Sweep, "status" | "progress" | "done_points" | "total_points" | "chunks">
  & Partial<Pick<Sweep, "cancelled_points" | "failed_points" | "first_failure">>;

/** "4 of 6 points (67%) in 2 jobs" while it runs and nothing failed or was cancelled.
 * Otherwise it says what was evaluated (done_points counts evaluated points only), what
 * failed with the first failure's error, and what was cancelled before it ran:
 * "9,500 of 10,000 points evaluated (95%) in 20 jobs; 500 failed: training.fp8.recipe: ..."
 * and "2,989 of 10,000 points evaluated (30%); 7,011 cancelled before they ran, in 20 jobs". */
export function sweepProgressText(sweep: ProgressFields): string {
  const total = sweep.total_points;
  const of = `${count.format(sweep.done_points)} of ${count.format(total)} ${total === 1 ? "point" : "points"}`;
  const jobs = plural(sweep.chunks, "job");
  const cancelled = sweep.cancelled_points ?? 0;
  const failed = sweep.failed_points ?? 0;
  if (sweep.status !== "cancelled" && cancelled === 0 && failed === 0) {
    return `${of} (${Math.round(sweep.progress * 100)}%) in ${jobs}`;
  }
  // the share evaluated, not the bar's (which counts the failed points as finished)
  const pct = total ? Math.round((sweep.done_points / total) * 100) : 100;
  const head = cancelled > 0 || sweep.status === "cancelled"
    ? `${of} evaluated (${pct}%); ${count.format(cancelled)} cancelled before ${cancelled === 1 ? "it" : "they"} ran, in ${jobs}`
    : `${of} evaluated (${pct}%) in ${jobs}`;
  if (failed === 0) return head;
  const why = sweep.first_failure?.error;
  return `${head}; ${count.format(failed)} failed${why ? `: ${why}` : ""}`;
}
