// What the sweep page fetches on each poll: the light detail (GET /api/v1/sweeps/<id>/?points=none,
// progress without the points: a 10,000-point sweep's full detail is ~7 MB), and the full one
// (every point, for the heatmap, the Pareto chart and the table) only when the points changed
// and a while has passed since the last, or once the sweep has finished. A share link's page
// does the same through its link's API (/api/v1/shared/<token>/?points=none).

import { FINISHED } from "./api";

/** The least time between two full fetches while the sweep runs (ms). */
export const FULL_EVERY_MS = 5000;

/** The light form's URL of a sweep's own API URL or of its share link's; null for another. */
export function lightUrl(url: string): string | null {
  return /^\/api\/v1\/(sweeps\/\d+|shared\/[\w-]+)\/$/.test(url) ? `${url}?points=none` : null;
}

/** What the page last drew from a full fetch. */
export interface Drawn {
  done_points: number;
  failed_points?: number;
  status: string;
}

/** Points finished, evaluated or failed: what changes when a chunk moves on. */
const finished = (s: { done_points: number; failed_points?: number }) => s.done_points + (s.failed_points ?? 0);

/** Whether the poll must fetch the points: nothing drawn yet; the sweep has finished since
 * the last full fetch; or points finished since it, at least FULL_EVERY_MS ago. */
export function needsPoints(light: Drawn, drawn: Drawn | null, msSinceFull: number): boolean {
  if (!drawn) return true;
  if (FINISHED.has(light.status)) return !FINISHED.has(drawn.status) || finished(light) !== finished(drawn);
  return finished(light) !== finished(drawn) && msSinceFull >= FULL_EVERY_MS;
}
