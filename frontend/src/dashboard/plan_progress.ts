// What a plan's page shows while the search runs, from GET /api/v1/plans/<id>/: the bar's
// percentage, "candidates done of total, feasible", and the best candidate so far. Pure, so
// it is unit-tested in Node; pages/plan.ts puts it on the page.

import { formatSeconds, plural } from "../units";
import { formatUSD } from "./format";
import type { Plan, PlanBest } from "./types";

/** The bar's value, 0..100: whole percent of the candidates done, rounded down (as the
 * server writes it, so the page's first text and the polled one agree, and 100 only when
 * every candidate is done); from the progress 0..1 when the counts are missing. */
export function planPercent(plan: Partial<Pick<Plan, "progress" | "done" | "total_candidates">>): number {
  const { done, total_candidates: total } = plan;
  if (typeof done === "number" && typeof total === "number" && total > 0) {
    return Math.min(100, Math.max(0, Math.floor((100 * done) / total)));
  }
  const p = typeof plan.progress === "number" && Number.isFinite(plan.progress) ? plan.progress : 0;
  return Math.floor(Math.min(1, Math.max(0, p)) * 100);
}

/** "1234 of 2160 candidates (57%), 210 feasible": the words beside the bar, as the server
 * writes them in the page (_plan_body.html) before the first poll. */
export function planProgressText(plan: Pick<Plan, "progress" | "done" | "total_candidates" | "feasible">): string {
  return `${plan.done} of ${plural(plan.total_candidates, "candidate")} (${planPercent(plan)}%), ${plan.feasible} feasible`;
}

/** "best so far: candidate 1041 — 4 nodes, TP 8, PP 2, zero1 — step 5.21 s, $1.93 per M tokens"; "" for none. */
export function bestSoFarText(best: PlanBest | null | undefined): string {
  if (!best) return "";
  const c = best.choices ?? {};
  const layout = [
    typeof c.num_nodes === "number" ? `${c.num_nodes} node${c.num_nodes === 1 ? "" : "s"}` : null,
    typeof c.tensor_parallel === "number" ? `TP ${c.tensor_parallel}` : null,
    typeof c.pipeline_parallel === "number" ? `PP ${c.pipeline_parallel}` : null,
    typeof c.strategy === "string" ? c.strategy : null,
  ].filter(Boolean).join(", ");
  const cost = typeof best.usd_per_million_tokens === "number"
    ? `, ${formatUSD(best.usd_per_million_tokens)} per M tokens` : "";
  return `best so far: candidate ${best.index}${layout ? ` — ${layout}` : ""} — step ` +
    `${formatSeconds(best.step_time_s)}${cost}`;
}
