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

/** While a running run's progress moved within this long (ms), polls stay `ACTIVE_POLL_MS` apart. */
export const ACTIVE_WINDOW_MS = 5000;
/** The longest wait between polls of a run that is progressing (ms). */
export const ACTIVE_POLL_MS = 1000;
/** Where the back-off resumes once a run stops moving: `pollDelay(2)`, 1.125 s, then ×1.5 to 5 s. */
const ACTIVE_ATTEMPT = 2;

/** What the run page remembers between polls to pace the next one. */
export interface RunPollState {
  /** Back-off step for `pollDelay`. */
  attempt: number;
  status: string;
  /** Progress fraction at the last poll; null when none was reported. */
  progress: number | null;
  /** When (ms, the caller's clock) the run last moved: started running or reported more progress. */
  movedAt: number | null;
}

export const FIRST_RUN_POLL: RunPollState = { attempt: 0, status: "", progress: null, movedAt: null };

/**
 * The delay before the next poll of a run just read (`run`, at `now` ms) and the state to
 * keep. A run that is running and moved (started, or its progress grew) within
 * `ACTIVE_WINDOW_MS` is polled at least every `ACTIVE_POLL_MS`, so its figure follows it;
 * otherwise (queued, or running without new progress) the delay backs off as `pollDelay`
 * does, from ~1.1 s after a run that moved, to 5 s; 15 s while the tab is hidden.
 */
export function nextRunPoll(prev: RunPollState, run: { status: string; progress?: number | null },
  now: number, hidden: boolean): { state: RunPollState; delay: number } {
  const progress = progressFraction(run.progress);
  const running = run.status === "running";
  const moved = running && (prev.status !== "running"
    || (progress !== null && (prev.progress === null || progress > prev.progress)));
  const movedAt = moved ? now : running ? prev.movedAt : null;
  const active = movedAt !== null && now - movedAt < ACTIVE_WINDOW_MS;
  if (active && !hidden) {
    const attempt = Math.min(prev.attempt, ACTIVE_ATTEMPT);
    return { state: { attempt: Math.min(attempt + 1, ACTIVE_ATTEMPT), status: run.status, progress, movedAt },
      delay: Math.min(ACTIVE_POLL_MS, pollDelay(attempt, false)) };
  }
  return { state: { attempt: prev.attempt + 1, status: run.status, progress, movedAt },
    delay: pollDelay(prev.attempt, hidden) };
}

/**
 * Seconds a run has been at its present stage at `nowMs` (the page's clock, ms since the
 * epoch): running since `started_at`, queued since `created_at`; null for a finished run
 * or one without the time. `seenForS`, how long this page has watched it at that stage, is a
 * floor: a browser clock behind the server's would otherwise read less than it has seen.
 */
export function runElapsedSeconds(run: { status: string; created_at?: string | null; started_at?: string | null },
  nowMs: number, seenForS = 0): number | null {
  if (TERMINAL_STATUSES.has(run.status)) return null;
  const since = run.status === "running" ? run.started_at : run.created_at;
  const t = since ? Date.parse(since) : NaN;
  if (!Number.isFinite(t)) return seenForS > 0 ? seenForS : null;
  return Math.max(seenForS, (nowMs - t) / 1000, 0);
}

/** Elapsed time in whole seconds, as a clock that ticks each second: "7 s", "2 min 05 s", "1 h 02 min". */
export function formatElapsed(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s} s`;
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${pad(Math.floor(s / 60) % 60)} min`;
}
