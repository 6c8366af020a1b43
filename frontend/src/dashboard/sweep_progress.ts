// The words beside a sweep's progress bar, from GET /api/v1/sweeps/<id>/. Pure, so it is
// unit-tested in Node; pages/sweep.ts puts it on the page.

import { plural } from "../units";
import type { Sweep } from "./types";

const count = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** "4 of 6 points (67%) in 2 jobs" while it runs; a cancelled sweep says what was evaluated
 * and what was cancelled before it ran: "2,989 of 10,000 points evaluated (30%); 7,011
 * cancelled before they ran, in 20 jobs" (done_points counts evaluated points only). */
export function sweepProgressText(
  sweep: Pick<Sweep, "status" | "progress" | "done_points" | "total_points" | "chunks"> & { cancelled_points?: number },
): string {
  const pct = Math.round(sweep.progress * 100);
  const total = sweep.total_points;
  const of = `${count.format(sweep.done_points)} of ${count.format(total)} ${total === 1 ? "point" : "points"}`;
  const jobs = plural(sweep.chunks, "job");
  const cancelled = sweep.cancelled_points ?? 0;
  if (sweep.status === "cancelled" || cancelled > 0) {
    return `${of} evaluated (${pct}%); ${count.format(cancelled)} cancelled before ${cancelled === 1 ? "it" : "they"} ran, in ${jobs}`;
  }
  return `${of} (${pct}%) in ${jobs}`;
}
