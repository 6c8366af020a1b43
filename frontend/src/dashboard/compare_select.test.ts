import { describe, expect, it } from "vitest";

import { MAX_COMPARED, MIN_COMPARED, compareProblem, tickedFromQuery } from "./compare_select";

describe("compare checked", () => {
  it("takes 2 to 8 scenarios and says what to change otherwise", () => {
    expect([MIN_COMPARED, MAX_COMPARED]).toEqual([2, 8]);
    expect(compareProblem(0)).toBe("Tick 2 to 8 scenarios to compare them.");
    expect(compareProblem(1)).toBe("Tick at least one more scenario: a comparison takes 2 to 8, and 1 is ticked.");
    expect(compareProblem(2)).toBeNull();
    expect(compareProblem(8)).toBeNull();
    expect(compareProblem(10)).toBe("Untick 2: a comparison takes 2 to 8 scenarios, and 10 are ticked.");
  });

  it("reads the ticks the server hands back, ids only", () => {
    expect(tickedFromQuery("?compare=3&compare=15")).toEqual(["3", "15"]);
    expect(tickedFromQuery("?compare=3&compare=3&compare=x1&compare=")).toEqual(["3"]);
    expect(tickedFromQuery("")).toEqual([]);
  });
});
