import { describe, expect, it } from "vitest";

import { checkpointRows, durationWithSeconds, wasteSlices, wasteText } from "./checkpoint";
import { sampleReport, stepReport } from "./testdata/report";

const row = (name: string) => checkpointRows(stepReport()).find((r) => r.name === name);

describe("checkpointRows", () => {
  it("gives size in GB and GiB and the shard per rank", () => {
    // 1e12 / 2^30 = 931.3 GiB; 6.25e10 / 2^30 = 58.2 GiB
    expect(row("Size")?.value).toBe("1.0 TB (931.3 GiB)");
    expect(row("Shard per rank")).toMatchObject({ value: "62.5 GB (58.2 GiB)", note: "16 writers" });
    expect(row("Full size (read back on restart)")).toBeUndefined();
  });

  it("says one writer in the singular (a 1-GPU run)", () => {
    const r = stepReport();
    r.checkpoint!.size = { writers: 1 };
    expect(checkpointRows(r).find((x) => x.name === "Shard per rank")?.note).toBe("1 writer");
  });

  it("gives times in s and intervals in h/min", () => {
    expect(row("Write to the target")?.value).toBe("17.40 s");
    expect(row("Stall per checkpoint")?.value).toBe("1.20 s");
    expect(row("Interval")).toMatchObject({ value: "1 h 30 min (5,400 s)", note: "every 540 steps; Daly's optimum, rounded to whole steps" });
    expect(row("Best interval (Daly 2006)")?.value).toBe("1 h 30 min (5,400 s)");
    // 5000 s = 1 h 23 min 20 s
    expect(row("Best interval (Young 1974)")?.value).toBe("1 h 23 min (5,000 s)");
    // 3.6e6 s = 1,000 h = 41.7 days; 6.25e-5 per GPU-hour = 62.50 per million
    expect(row("MTBF of the job")).toMatchObject({ value: "41.7 days (1,000 h)", note: "62.50 failures per million GPU-hours" });
    expect(row("Restart")).toMatchObject({ value: "7 min 20 s (440 s)", note: "detect 2 min + reload 20.0 s + warm-up 5 min" });
  });

  it("gives goodput, waste, Monte-Carlo and the slowdown in %", () => {
    expect(row("Goodput")?.value).toBe("99.50%");
    expect(row("Waste")?.value).toBe("0.500%");
    expect(row("Goodput, Monte-Carlo")).toMatchObject({ value: "99.48% mean" });
    expect(row("Goodput, Monte-Carlo")?.note).toBe("p5 99.00%, p50 99.50%, p95 99.70% over 200 runs of 30.0 days (720 h)");
    expect(row("Training slowdown while writing")).toMatchObject({ value: "500.0 ms per step" });
    expect(row("Training slowdown while writing")?.note).toContain("2 steps overlap the write: 1.00 s per checkpoint");
    expect(row("Target")?.value).toBe("the parallel file system at 57.5 GB/s write (shared by the cluster)");
    expect(row("Method")?.value).toBe("async (snapshot, then write in the background)");
  });

  it("is empty without a checkpoint", () => {
    expect(checkpointRows(sampleReport())).toEqual([]);
  });
});

describe("waste", () => {
  it("splits the waste, largest first", () => {
    const ck = stepReport().checkpoint!;
    expect(wasteSlices(ck).map((s) => [s.key, s.fraction])).toEqual([["rework", 0.0025], ["checkpoint", 0.002], ["restart", 0.0005]]);
    expect(wasteText(ck)).toBe(
      "redoing work lost since the last checkpoint 0.250%; writing checkpoints (stall) 0.200%; restarts (detect, reload, warm-up) 0.050%");
  });

  it("says short durations in seconds only", () => {
    expect(durationWithSeconds(45)).toBe("45.0 s");
    expect(durationWithSeconds(90)).toBe("1 min 30 s (90 s)");
    expect(durationWithSeconds(3 * 86400)).toBe("3.0 days (72 h)");
  });
});
