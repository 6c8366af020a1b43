// Pure helpers for polling a run.

/** Progress as a fraction 0..1, from 0..1 or 0..100; null when unknown. */
export function progressFraction(progress: number | null | undefined): number | null {
  if (typeof progress !== "number" || !Number.isFinite(progress)) return null;
  const f = progress > 1 ? progress / 100 : progress;
  return Math.min(1, Math.max(0, f));
}

/** Next poll delay: 0.5 s growing ×1.5 up to 5 s while the tab is visible; 15 s while hidden. */
export function pollDelay(attempt: number, hidden: boolean): number {
  if (hidden) return 15000;
  return Math.min(5000, Math.round(500 * 1.5 ** attempt));
}

export const TERMINAL_STATUSES = new Set(["succeeded", "failed", "cancelled", "canceled"]);
