// Fetching for the dashboard pages, apart from drawing: a comparison or sweep from the
// owner's API or from a share link (which wraps it in `{kind, ..., data}`), and cancel.

import { getJSON, postJSON } from "../api";
import type { Comparison, Plan, Shared, Sweep } from "./types";

/** The object itself, whether the URL is the owner's endpoint or a share link's. */
export function unwrap<T>(body: T | Shared<T>): { data: T; shared: Shared<T> | null } {
  if (body && typeof body === "object" && "kind" in body && "token" in body && "data" in body) {
    const shared = body as Shared<T>;
    return { data: shared.data, shared };
  }
  return { data: body as T, shared: null };
}

export async function fetchComparison(url: string, signal?: AbortSignal) {
  return unwrap(await getJSON<Comparison | Shared<Comparison>>(url, signal));
}

export async function fetchSweep(url: string, signal?: AbortSignal) {
  return unwrap(await getJSON<Sweep | Shared<Sweep>>(url, signal));
}

export async function fetchPlan(url: string, signal?: AbortSignal) {
  return unwrap(await getJSON<Plan | Shared<Plan>>(url, signal));
}

export function cancelSweep(url: string): Promise<Sweep> {
  return postJSON<Sweep>(url, {});
}

/** Statuses after which a comparison, sweep or plan no longer changes. */
export const FINISHED = new Set(["succeeded", "failed", "cancelled"]);
