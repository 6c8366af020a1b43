import { describe, expect, it } from "vitest";

import { betterWord, columnLabel, formatInput, formatUSD, formatValue, inputUnit, pathLabel, pathPieces, valuePieces } from "./format";

describe("formatValue", () => {
  it("labels every number with its unit, bytes in GB and GiB", () => {
    expect(formatValue(85.1e9, "bytes")).toBe("85.1 GB (79.3 GiB)");
    expect(formatValue(4.2654, "s")).toBe("4.27 s");
    expect(formatValue(0.3641, "fraction")).toBe("36.4%");
    expect(formatValue(0.99981, "fraction")).toBe("99.98%");
    expect(formatValue(7682.29, "tokens_per_s")).toBe("7,682 tokens/s");
    expect(formatValue(39.33, "usd_per_hour")).toBe("$39.33/h");
    expect(formatValue(0.4221, "usd_per_mtok")).toBe("$0.422 per 1M tokens");
    expect(formatValue(68976648192, "count")).toBe("69.0 B (68,976,648,192)");
    expect(formatValue(16, "count")).toBe("16");
  });

  it("shows booleans as words and missing values as a dash", () => {
    expect(formatValue(true, "bool")).toBe("yes");
    expect(formatValue(false, "bool")).toBe("no");
    expect(formatValue(null, "s")).toBe("—");
    expect(formatValue(undefined, "bytes")).toBe("—");
    expect(formatValue("exposed_comm", "text")).toBe("exposed_comm");
  });
});

describe("inputs", () => {
  it("reads the unit from the key's suffix", () => {
    expect(inputUnit("cluster.tiers.ddr.capacity_bytes")).toBe("bytes");
    expect(inputUnit("cluster.nic_bytes_per_s")).toBe("bytes_per_s");
    expect(inputUnit("checkpoint.detect_s")).toBe("s");
    expect(inputUnit("training.compute_efficiency")).toBe("fraction");
    expect(inputUnit("strategy.kind")).toBe("");
  });

  it("formats an input by its unit", () => {
    expect(formatInput("cluster.nic_bytes_per_s", 4e11)).toBe("400.0 GB/s");
    expect(formatInput("cluster.tiers.ddr.capacity_bytes", 2 ** 41)).toBe("2.2 TB (2.0 TiB)");
    expect(formatInput("training.compute_efficiency", 0.55)).toBe("55.0%");
    expect(formatInput("cluster.num_nodes", 2)).toBe("2");
    expect(formatInput("strategy.kind", "zero3")).toBe("zero3");
    expect(formatInput("training.flash_attention", true)).toBe("yes");
    expect(formatInput("cluster.accelerator.peak_flops_bf16", 989e12)).toBe("989.0 TFLOP/s");
  });
});

describe("labels", () => {
  it("numbers columns and cuts long names", () => {
    expect(columnLabel(0, "ZeRO-3")).toBe("1. ZeRO-3");
    const long = columnLabel(7, "Llama-2-70B on 2x DGX H100 with ZeRO-3 and NVMe offload", 20);
    expect(long).toHaveLength(20);
    expect(long.startsWith("8. Llama")).toBe(true);
    expect(long.endsWith("…")).toBe(true);
  });

  it("names what best means and paths as words", () => {
    expect(betterWord("min")).toBe("lowest");
    expect(betterWord("max")).toBe("highest");
    expect(betterWord("")).toBe("");
    expect(betterWord("max", "bool")).toBe("yes");          // "Fits in every tier (yes is best)"
    expect(betterWord("max", "s")).toBe("highest");
    expect(pathLabel("strategy.offload_optimizer")).toBe("strategy › offload optimizer");
    expect(formatUSD(1234.5)).toBe("$1,234.50");
  });
});

describe("wrapping in a narrow column", () => {
  it("cuts a value between its units, never between a number and its unit", () => {
    expect(valuePieces(formatValue(2199e9, "bytes"))).toEqual(["2.2 TB", "(2.0 TiB)"]);
    expect(valuePieces(formatValue(1.5, "usd_per_mtok"))).toEqual(["$1.50", "per 1M tokens"]);
    expect(valuePieces(formatValue(69e9, "count"))).toEqual(["69.0 B", "(69,000,000,000)"]);
    expect(valuePieces(formatValue(14602, "tokens_per_s"))).toEqual(["14,602 tokens/s"]);
    expect(valuePieces(formatValue(8.98, "s"))).toEqual(["8.98 s"]);
    expect(valuePieces("—")).toEqual(["—"]);
  });

  it("lets a dotted key break after its dots only", () => {
    expect(pathPieces("cluster.price_usd_per_node_hour")).toEqual(["cluster.", "price_usd_per_node_hour"]);
    expect(pathPieces("cluster.tiers.ddr.capacity_bytes")).toEqual(["cluster.", "tiers.", "ddr.", "capacity_bytes"]);
    expect(pathPieces("name")).toEqual(["name"]);
  });
});
