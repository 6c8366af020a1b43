// A plan's page at /plans/<id>/ (and a shared plan at /s/<token>/): while the search runs,
// the progress bar, "candidates done of total, feasible" and the best candidate so far
// follow the plan's API (GET /api/v1/plans/<id>/, or the share link's) instead of the
// page reloading; polling stops once the plan has finished, and the page's plan section
// is then replaced by the server's (the ranked table, the Pareto front, the rejected
// counts: one template, the same as without JavaScript, where <noscript> reloads the page).
// A finished plan's Pareto front is drawn as a chart (charts/plan_series.ts) from the JSON
// the template embeds, on first load and when the section is replaced in place.

import "../base";

import { ApiError } from "../api";
import { mountChart } from "../charts/base";
import { noChartCaption, planParetoOption, planPoints, type PlanChartData } from "../charts/plan_series";
import { FINISHED, fetchPlan } from "../dashboard/api";
import { bestSoFarText, planPercent, planProgressText } from "../dashboard/plan_progress";
import type { Plan } from "../dashboard/types";
import { pollDelay } from "../poll";

/** The server's plan section of this page, fetched again (null when it is not there). */
async function freshRoot(): Promise<HTMLElement | null> {
  const response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (!response.ok) return null;
  const doc = new DOMParser().parseFromString(await response.text(), "text/html");
  const root = doc.getElementById("plan-root");
  return root ? (document.importNode(root, true) as HTMLElement) : null;
}

/** Draws the section's Pareto chart from its embedded JSON; data-points says how many it drew. */
function drawPareto(root: HTMLElement): void {
  const el = root.querySelector<HTMLElement>("#plan-pareto-chart");
  const json = root.querySelector<HTMLScriptElement>("#plan-pareto-data");
  if (!el || !json) return;
  let data: PlanChartData | null = null;
  try {
    data = JSON.parse(json.textContent ?? "null") as PlanChartData | null;
  } catch {
    data = null;
  }
  const points = data ? planPoints(data) : [];
  el.dataset.points = String(points.length);
  if (!data || !points.length) {
    el.hidden = true;
    const caption = root.querySelector<HTMLElement>("#plan-pareto-caption");
    if (caption) caption.textContent = noChartCaption(data);
    return;
  }
  const chartData = data;
  el.style.height = "400px";
  mountChart(el, (s) => planParetoOption(chartData, s) as never);
}

function mount(root: HTMLElement): void {
  const url = root.dataset.url ?? "";
  if (!url || FINISHED.has(root.dataset.status ?? "")) {
    drawPareto(root);
    root.dataset.ready = "true";
    return;
  }
  const bar = root.querySelector<HTMLProgressElement>("#plan-progress");
  const text = root.querySelector<HTMLElement>("#plan-progress-text");
  const best = root.querySelector<HTMLElement>("#plan-best");
  const status = root.querySelector<HTMLElement>("#plan-status");
  const problem = root.querySelector<HTMLElement>("#plan-poll-problem");
  root.dataset.live = "true";
  let attempt = 0;
  let polls = 0;

  const render = (plan: Plan) => {
    const pct = planPercent(plan);
    if (bar) {
      bar.value = pct;
      bar.dataset.value = String(pct);
    }
    if (text) text.textContent = planProgressText(plan);
    if (best) best.textContent = plan.best_so_far ? `; ${bestSoFarText(plan.best_so_far)}` : "";
    if (status) status.textContent = plan.status;
    root.dataset.liveStatus = plan.status;
    root.dataset.polls = String(++polls);
    if (problem) problem.hidden = true;
  };

  const finish = async () => {
    try {
      const fresh = await freshRoot();
      if (!fresh) throw new Error("no plan section in the page");
      fresh.dataset.polls = String(polls);
      root.replaceWith(fresh);
      drawPareto(fresh);
      fresh.dataset.ready = "true";
    } catch {
      window.location.reload();
    }
  };

  const poll = async () => {
    try {
      const { data } = await fetchPlan(url);
      render(data);
      if (FINISHED.has(data.status)) {
        await finish();
        return;
      }
    } catch (err) {
      if (err instanceof ApiError && [401, 403, 404, 410].includes(err.status)) {
        if (status) status.textContent = err.message;
        root.dataset.liveStatus = "unavailable";
        return;
      }
      if (problem) {
        problem.hidden = false;
        problem.textContent = `Could not reach the server (${err instanceof Error ? err.message : String(err)}); retrying…`;
      }
    }
    window.setTimeout(poll, pollDelay(Math.min(attempt++, 3), document.hidden));
  };
  void poll();
}

const root = document.getElementById("plan-root");
if (root) mount(root);
