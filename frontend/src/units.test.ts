import { describe, expect, it } from "vitest";
import {
  GB,
  GIB,
  formatBytes,
  formatBytesPerParam,
  formatCount,
  formatDuration,
  formatGBps,
  formatMs,
  formatTick,
  formatGB,
  formatGiB,
  formatNumber,
  formatParams,
  formatPercent,
  formatSeconds,
  formatSI,
  formatTierBytes,
  tierUnit,
  UNIT_TIB,
} from "./units";

describe("units as users read them", () => {
  it("reads GPU memory in GiB, as nvidia-smi and torch.cuda do", () => {
    // an "80 GB" H100 exposes int(79.3 * 2^30) bytes: 85.1 GB, but nvidia-smi says ~79.3 GiB
    expect(formatTierBytes(Math.trunc(79.3 * 2 ** 30), "hbm")).toBe("79.3 GiB");
  });

  it("reads every memory tier in binary units, GiB then TiB, as HBM is", () => {
    // the live estimate read "HBM per GPU 45.5 GiB of 79.3 GiB; DDR per node 136.1 GB of 2.2 TB"
    expect(formatTierBytes(136.1e9, "ddr")).toBe("126.8 GiB");
    expect(formatTierBytes(2 ** 41, "ddr")).toBe("2.0 TiB");
    expect(formatTierBytes(512 * 2 ** 30, "cxl")).toBe("512.0 GiB");
    expect(formatTierBytes(3 * 2 ** 40, "pmem")).toBe("3.0 TiB");
    expect(formatTierBytes(2 ** 41, "hbm")).toBe("2.0 TiB");
    expect(tierUnit("ddr", 2 ** 41)).toBe(UNIT_TIB);
  });

  it("reads drives in the decimal unit that suits the size", () => {
    // a DGX H100's eight 3.84 TB drives: 30.72e12 bytes, not "30,720.0 GB"
    expect(formatTierBytes(30.72e12, "nvme")).toBe("30.7 TB");
    expect(formatSI(2.25286e19)).toBe("22,528.6 PB");       // separators even when huge
    expect(formatSI(512e9)).toBe("512.0 GB");
    expect(formatBytes(30.72e12)).toBe("30.7 TB (27.9 TiB)");
  });
});

describe("byte units", () => {
  it("uses 1e9 for GB and 2^30 for GiB", () => {
    expect(GB).toBe(1_000_000_000);
    expect(GIB).toBe(1_073_741_824);
  });

  it("formats an H100's usable HBM (int(79.3 * 2^30) bytes) in both units", () => {
    const hbm = Math.trunc(79.3 * 2 ** 30); // 85,148,488,908 bytes
    expect(formatGB(hbm)).toBe("85.1 GB");
    expect(formatGiB(hbm)).toBe("79.3 GiB");
    expect(formatBytes(hbm)).toBe("85.1 GB (79.3 GiB)");
  });

  it("labels GB and GiB differently for the same bytes", () => {
    // 8.6e9 / 2^30 = 8.0094 GiB
    expect(formatGB(8.6e9)).toBe("8.6 GB");
    expect(formatGiB(8.6e9)).toBe("8.0 GiB");
    // 1e9 / 2^30 = 0.931 GiB
    expect(formatBytes(1e9)).toBe("1.0 GB (0.9 GiB)");
    expect(formatGiB(2 ** 30)).toBe("1.0 GiB");
  });

  it("keeps thousands separators and digits", () => {
    // 8 x 3.84 TB NVMe = 30.72e12 bytes
    expect(formatGB(8 * 3.84e12)).toBe("30,720.0 GB");
    expect(formatGB(2048 * GIB, 0)).toBe("2,199 GB");
    expect(formatGiB(2048 * GIB, 0)).toBe("2,048 GiB");
    expect(formatGB(1.23456e9, 3)).toBe("1.235 GB");
  });

  it("shows negatives but never a negative zero", () => {
    expect(formatGB(-6e9)).toBe("-6.0 GB");
    expect(formatGB(-1e7)).toBe("0.0 GB");
    expect(formatGB(0)).toBe("0.0 GB");
    // a LoRA run's gradients, 4e7 bytes: two significant digits, not "0.0 GB (0.0 GiB)"
    expect(formatBytes(4e7)).toBe("0.040 GB (0.037 GiB)");
    expect(formatBytes(0)).toBe("0.0 GB (0.0 GiB)");
    expect(formatBytes(85.1e9)).toBe("85.1 GB (79.3 GiB)");
  });

  it("does not print NaN", () => {
    expect(formatNumber(Number.NaN)).toBe("—");
    expect(formatNumber(Number.POSITIVE_INFINITY)).toBe("∞");
  });
});

describe("seconds", () => {
  it("picks a unit by size", () => {
    expect(formatSeconds(0)).toBe("0 s");
    expect(formatSeconds(0.00085)).toBe("850 µs");
    expect(formatSeconds(11e-6)).toBe("11 µs");          // NVMe open()
    expect(formatSeconds(2.5e-6)).toBe("2.5 µs");
    expect(formatSeconds(250e-9)).toBe("250 ns");        // CXL load latency, not "0 µs"
    expect(formatSeconds(0.0123)).toBe("12.3 ms");
    expect(formatSeconds(4.2)).toBe("4.20 s");
    expect(formatSeconds(90)).toBe("1.5 min");
    expect(formatSeconds(7200)).toBe("2.0 h");
  });
});

describe("percentages and counts", () => {
  it("formats fractions as percent", () => {
    expect(formatPercent(0.4567)).toBe("45.7%");
    expect(formatPercent(1)).toBe("100.0%");
    expect(formatPercent(0.05, 0)).toBe("5%");
  });

  it("abbreviates counts", () => {
    expect(formatCount(68_976_648_192)).toBe("69.0 B");
    expect(formatCount(6_738_415_616)).toBe("6.7 B");
    expect(formatCount(1.75e11)).toBe("175.0 B");
    expect(formatCount(1.2e12)).toBe("1.2 T");
    expect(formatCount(350e6)).toBe("350.0 M");
    expect(formatCount(999)).toBe("999");
  });

  it("formats parameter counts with the exact figure", () => {
    expect(formatParams(68_976_648_192)).toBe("69.0 B parameters (68,976,648,192)");
  });

  it("formats bytes per parameter", () => {
    expect(formatBytesPerParam(16)).toBe("16 B/param");
    expect(formatBytesPerParam(12)).toBe("12 B/param");
    expect(formatBytesPerParam(0.5)).toBe("0.5 B/param");
    expect(formatBytesPerParam(2.25)).toBe("2.25 B/param");
  });
});

describe("rates, durations and ticks", () => {
  it("gives bandwidth in GB/s", () => {
    expect(formatGBps(40e9)).toBe("40.0 GB/s");
    expect(formatGBps(6.9e9, 2)).toBe("6.90 GB/s");
  });

  it("gives long durations in h and min", () => {
    expect(formatDuration(45)).toBe("45.0 s");
    expect(formatDuration(750)).toBe("12 min 30 s");
    expect(formatDuration(3599.7)).toBe("1 h 0 min");
    expect(formatDuration(4984.4)).toBe("1 h 23 min");
    expect(formatDuration(7200)).toBe("2 h");
    expect(formatDuration(7199)).toBe("2 h");
    // 11,402,325 s = 131.97 days = 3,167 h
    expect(formatDuration(11402325.5)).toBe("132.0 days (3,167 h)");
  });

  it("gives milliseconds and trimmed ticks", () => {
    expect(formatMs(0.0401088)).toBe("40.1 ms");
    expect(formatTick(2.5)).toBe("2.5");
    expect(formatTick(10)).toBe("10");
    expect(formatTick(1234.5678)).toBe("1,234.568");
    expect(formatTick(-0)).toBe("0");
  });
});

describe("plural", () => {
  it("says one GPU and 8 GPUs", async () => {
    const { plural } = await import("./units");
    expect(plural(1, "GPU")).toBe("1 GPU");
    expect(plural(8, "GPU")).toBe("8 GPUs");
    expect(plural(0, "accumulation step")).toBe("0 accumulation steps");
  });
});
