// The scenario list's "Compare checked": how many scenarios a comparison takes, what to say
// when the ticks are not that, and the ticks the server hands back after refusing (in the
// URL, ?compare=3&compare=5). Pure: no DOM.

/** As the server's MIN_COMPARED and MAX_COMPARED (tierlab/dashboard/models.py). */
export const MIN_COMPARED = 2;
export const MAX_COMPARED = 8;

/** Why `ticked` scenarios cannot be compared, or null when they can. */
export function compareProblem(ticked: number): string | null {
  if (ticked < MIN_COMPARED) {
    return ticked === 0
      ? `Tick ${MIN_COMPARED} to ${MAX_COMPARED} scenarios to compare them.`
      : `Tick at least one more scenario: a comparison takes ${MIN_COMPARED} to ${MAX_COMPARED}, and 1 is ticked.`;
  }
  if (ticked > MAX_COMPARED) {
    return `Untick ${ticked - MAX_COMPARED}: a comparison takes ${MIN_COMPARED} to ${MAX_COMPARED} scenarios, and ${ticked} are ticked.`;
  }
  return null;
}

/** The scenario ids a URL's query asks to tick again (?compare=3&compare=5); digits only. */
export function tickedFromQuery(search: string): string[] {
  return [...new Set(new URLSearchParams(search).getAll("compare").filter((v) => /^\d+$/.test(v)))];
}
