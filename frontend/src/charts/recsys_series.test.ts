import { describe, expect, it } from "vitest";
import type { BarSeriesOption } from "echarts/charts";

import { recsysReport } from "../testdata/recsys";
import {
  CAPACITY_SERIES,
  HIT_AXIS_NAME,
  OVER_SERIES,
  HIT_SERIES,
  PS_BYTES_AXIS_NAME,
  PS_TIME_AXIS_NAME,
  STORED_AXIS_NAME,
  STORED_SERIES,
  devicesText,
  embeddingChartOption,
  embeddingTierRows,
  embeddingTotals,
  formatGBShort,
  formatMsSig,
  formatUSD,
  hasEmbedding,
  hasPsComparison,
  isRecsysOnly,
  lookupOverlap,
  psChartOption,
  psDesignRows,
  psSummary,
  recsysParamBytesRows,
  showsPsSection,
  storedAxisLabel,
  trafficGB,
  type RecsysReport,
} from "./recsys_series";

const asArray = <T>(x: T | T[] | undefined): T[] => (x === undefined ? [] : Array.isArray(x) ? x : [x]);
type Fmt = { formatter: (...a: unknown[]) => string };

describe("units of the recsys sections", () => {
  it("writes milliseconds with three significant digits", () => {
    expect(formatMsSig(0.0731)).toBe("73.1 ms");
    expect(formatMsSig(0.25)).toBe("250 ms");
    expect(formatMsSig(0.006)).toBe("6.00 ms");
    expect(formatMsSig(5.57e-4)).toBe("0.557 ms");
    expect(formatMsSig(1.017e-6)).toBe("0.00102 ms");
    expect(formatMsSig(0)).toBe("0 ms");
  });

  it("writes dollars whole and GB short", () => {
    expect(formatUSD(62725.5)).toBe("$62,726");
    expect(formatGBShort(49.06e9)).toBe("49.1 GB");
    expect(formatGBShort(1332.49e9)).toBe("1,332 GB");
    expect(formatGBShort(0.37e9)).toBe("0.37 GB");
    expect(formatGBShort(0)).toBe("0 GB");
  });

  it("names the devices a tier is spread over", () => {
    expect(devicesText("hbm", 16)).toBe("16 GPUs");
    expect(devicesText("ddr", 1)).toBe("1 node");
    expect(devicesText("nvme", 2)).toBe("2 nodes");
  });
});

describe("embedding placement", () => {
  const report = recsysReport();
  const rows = embeddingTierRows(report);

  it("has a row per tier, hottest first, with bytes against capacity", () => {
    expect(rows.map((r) => r.label)).toEqual(["HBM", "DDR", "NVMe"]);
    expect(rows.map((r) => r.devicesText)).toEqual(["16 GPUs", "2 nodes", "2 nodes"]);
    // 400 / 800, 600 / 4000, 200 / 60000
    expect(rows.map((r) => r.used)).toEqual([0.5, 0.15, 200 / 60000]);
    expect(rows.map((r) => r.hitRate)).toEqual([0.9, 0.08, 0.02]);
    expect(rows.map((r) => r.boundText)).toEqual(["bandwidth (GB/s)", "bandwidth (GB/s)", "IOPS (random reads/s)"]);
    expect(rows.map((r) => r.costUsd)).toEqual([120_000, 3000, 20]);
    expect(rows.every((r) => r.overBytes === 0)).toBe(true);
  });

  it("totals rows, bytes, capacity and cost; lookup time is the engine's", () => {
    expect(embeddingTotals(report)).toEqual({
      rows: 300_000_000,
      bytes: 1200e9,
      valueBytes: 600e9,
      capacityBytes: 64800e9, // 800 + 4,000 + 60,000 GB
      lookupsPerStep: 14_000_000,
      lookupS: 0.01,
      costUsd: 123_020,
      optimizer: "adagrad",
    });
  });

  it("says how much of the lookup time dense compute hides", () => {
    const o = lookupOverlap(report)!;
    expect(o).toMatchObject({ lookupS: 0.01, denseS: 0.006, hiddenS: 0.006, exposedS: 0.004, hiddenFraction: 0.6 });
    expect(o.sentence).toBe(
      "Embedding lookups take 10.0 ms per step against 6.00 ms of dense compute: 6.00 ms is hidden " +
        "behind the compute and 4.00 ms is exposed, adding to the step.",
    );
    const hidden = recsysReport();
    Object.assign(hidden.embedding!, { lookup_s_per_step: 0.002, hidden_s: 0.002, exposed_s: 0 });
    expect(lookupOverlap(hidden)!.sentence).toBe(
      "Embedding lookups take 2.00 ms per step against 6.00 ms of dense compute: all of it is hidden when rows are prefetched a batch ahead.",
    );
  });

  it("is empty for a report without embeddings", () => {
    const r: RecsysReport = { ...recsysReport(), embedding: undefined };
    expect(hasEmbedding(r)).toBe(false);
    expect(embeddingTierRows(r)).toEqual([]);
    expect(lookupOverlap(r)).toBeNull();
    expect(embeddingChartOption(r)).toEqual({ series: [] });
  });
});

describe("bytes per parameter of a recommendation model", () => {
  // what the engine reports for DLRM: the transformer convention, used for the dense MLPs only
  const convention = {
    name: "realistic",
    bytes_per_param: { params: 2, grads: 2, master_weights: 4, optimizer_states: 8, k: 12, total: 16 },
  };
  const report = (): RecsysReport => ({
    ...recsysReport(),
    convention,
    model: { ...recsysReport().model, num_layers: undefined, hidden_size: undefined },
  });

  it("tells a recommendation model alone from a transformer (with or without embeddings)", () => {
    expect(isRecsysOnly(report())).toBe(true);
    const both = report();
    both.model = { ...both.model, num_layers: 32, hidden_size: 4096 };
    expect(isRecsysOnly(both)).toBe(false);
    expect(isRecsysOnly({ ...report(), embedding: null })).toBe(false);
  });

  it("counts embedding rows as stored and dense MLP states by the convention, never the transformer table", () => {
    const r = report();
    r.embedding!.tables = [{ name: "C1", rows: 10, dim: 128, bytes: 5120, dtype: "fp32" }];
    expect(recsysParamBytesRows(r)).toEqual([
      // 1,200 GB stored for 150 B parameters: 600 GB of fp32 values + 600 GB of Adagrad state
      { key: "embedding", label: "Embedding tables", params: 150e9, bytesPerParam: 8,
        detail: "4 B/param of values (fp32) + 4 B/param of Adagrad state" },
      { key: "dense", label: "Dense MLPs", params: 16e6, bytesPerParam: 16,
        detail: "2 B/param parameters + 2 B/param gradients + 12 B/param optimizer states (realistic convention), on every GPU" },
    ]);
  });

  it("says less when the report does", () => {
    const r = report();
    delete r.embedding!.value_bytes;
    delete r.convention;
    const rows = recsysParamBytesRows(r);
    expect(rows.map((x) => [x.key, x.bytesPerParam, x.detail])).toEqual([
      ["embedding", 8, "values and optimizer state, as stored"],
    ]);
    expect(recsysParamBytesRows({ ...report(), embedding: undefined })).toEqual([]);
  });
});

describe("embeddingChartOption", () => {
  const option = embeddingChartOption(recsysReport());
  const series = asArray(option.series) as BarSeriesOption[];
  const yAxis = asArray(option.yAxis) as { name: string; max?: number; gridIndex: number; axisLabel: Fmt }[];
  const xAxis = asArray(option.xAxis) as { data: string[]; gridIndex: number; axisLabel: Fmt & { color?: string } }[];

  it("draws the hit rate per tier in % in the first grid, 0 to 100", () => {
    expect(asArray(option.grid)).toHaveLength(4); // hit rate + one per tier
    expect(series[0]).toMatchObject({ name: HIT_SERIES, xAxisIndex: 0, yAxisIndex: 0 });
    expect((series[0].data as { value: number }[]).map((d) => d.value)).toEqual([90, 8, 2]);
    expect(yAxis[0]).toMatchObject({ name: HIT_AXIS_NAME, max: 100 });
    expect(HIT_AXIS_NAME).toContain("(%)");
    expect(yAxis[0].axisLabel.formatter(25)).toBe("25%");
    expect(xAxis[0].data).toEqual(["hbm", "ddr", "nvme"]);
    expect(xAxis[0].axisLabel.formatter("nvme")).toBe("NVMe");
    expect((series[0].label as Fmt).formatter({ dataIndex: 2 })).toBe("2.0%");
    // 90% is labelled inside the bar's top (clear of the axis name), 8% above it
    const data = series[0].data as { label?: { position: string } }[];
    expect(data.map((d) => d.label?.position)).toEqual(["insideTop", undefined, undefined]);
  });

  it("draws each tier's stored bytes against a dashed capacity frame, each on its own axis and unit", () => {
    const stored = series.filter((s) => s.name === STORED_SERIES);
    const capacity = series.filter((s) => s.name === CAPACITY_SERIES);
    // HBM 400 of 800 GB in GB; DDR 600 GB of 4 TB and NVMe 200 GB of 60 TB in TB (the larger
    // of stored and capacity picks the unit, units.decimalUnit: GB below 1 TB)
    expect(stored.map((s) => s.data)).toEqual([[400], [0.6], [0.2]]);
    expect(capacity.map((s) => s.data)).toEqual([[800], [4], [60]]);
    expect(stored.map((s) => s.xAxisIndex)).toEqual([1, 2, 3]);
    expect(capacity[0].itemStyle).toMatchObject({ color: "transparent", borderType: "dashed" });
    expect((capacity[0].label as Fmt).formatter()).toBe("cap. 800 GB");
    expect(yAxis.slice(1).map((y) => y.name)).toEqual([`${STORED_AXIS_NAME} (GB)`, "TB", "TB"]);
    expect(yAxis.slice(1).map((y) => y.axisLabel.formatter)).toEqual(["{value} GB", "{value} TB", "{value} TB"]);
    expect(xAxis[1].axisLabel.formatter()).toBe("HBM · 16 GPUs\n400 / 800 GB");
    expect(xAxis[3].axisLabel.formatter()).toBe("NVMe · 2 nodes\n0.20 / 60.0 TB");
  });

  it("puts GB, GiB, rows, hit rate and lookup time in the tooltip", () => {
    const tooltip = asArray(option.tooltip)[0] as Fmt;
    const html = tooltip.formatter({ name: "nvme", seriesName: STORED_SERIES });
    expect(html).toContain("NVMe, 2 nodes");
    expect(html).toContain("Stored: 200.0 GB (186.3 GiB)");
    expect(html).toContain("Capacity: 60.0 TB (54.6 TiB) (0.3% used)");
    expect(html).toContain("Per node: 100.0 GB of 30,000.0 GB");
    expect(html).toContain("Rows: 50,000,000");
    expect(html).toContain("Hit rate: 2.0% of lookups");
    expect(html).toContain("Lookup time: 10.0 ms per step, limited by IOPS (random reads/s)");
    expect(tooltip.formatter({ name: "hbm", seriesName: HIT_SERIES })).toContain("90.0% of lookups; 2.00 ms per step");
  });

  it("marks a tier over its capacity in red, light and dark", () => {
    const r = recsysReport();
    Object.assign(r.embedding!.tiers[0], { bytes: 1000e9, over_capacity_bytes: 200e9 });
    const x = (dark: boolean) => asArray(embeddingChartOption(r, { dark }).xAxis)[1] as { axisLabel: { color?: string; fontWeight: string } };
    expect(x(false).axisLabel).toMatchObject({ color: "#c62828", fontWeight: "bold" });
    expect(x(true).axisLabel.color).toBe("#ff8a80");
    const html = (asArray(embeddingChartOption(r).tooltip)[0] as Fmt).formatter({ name: "hbm", seriesName: STORED_SERIES });
    expect(html).toContain("Over by 200.0 GB (186.3 GiB)");
    // the bar (in TB: 1 TB stored): 0.8 TB in the tier's colour up to the capacity, 0.2 TB in red above it
    const hbm = (asArray(embeddingChartOption(r).series) as BarSeriesOption[]).filter((s) => s.xAxisIndex === 1);
    expect(hbm.map((s) => [s.name, s.data])).toEqual([[STORED_SERIES, [0.8]], [OVER_SERIES, [0.2]], [CAPACITY_SERIES, [0.8]]]);
    expect(hbm[1].stack).toBe(hbm[0].stack);
    expect(hbm[1].itemStyle?.color).toBe("#c62828");
  });
});

describe("parameter server vs all-to-all", () => {
  const report = recsysReport();

  it("has a row per design with its time, bytes, traffic and busiest link", () => {
    const rows = psDesignRows(report);
    expect(rows.map((r) => [r.label, r.stepS, r.bytesOnWire, r.faster])).toEqual([
      ["Parameter server", 0.08, 8e9, false],
      ["All-to-all", 0.02, 4e9, true],
    ]);
    // replication moved nothing: left out
    expect(rows[0].traffic.map((t) => [t.label, t.bytes])).toEqual([
      ["PS pull (rows to workers)", 3e9],
      ["PS push (row gradients to servers)", 3e9],
      ["Dense all-reduce (MLP gradients)", 2e9],
    ]);
    expect(rows[0].busiest).toEqual({ name: "server_in", label: "PS server NIC in", seconds: 0.05 });
    expect(rows[1].busiest?.name).toBe("nic_out");
  });

  it("says which design is faster and by how much", () => {
    expect(psSummary(report)).toBe(
      "All-to-all is 4.00× faster than the parameter server: 20.0 ms vs 80.0 ms per step, moving 4.00 GB instead of 8.00 GB on the wire.",
    );
  });

  it("says it for the engine's DLRM v2 on two DGX H100 as well", () => {
    // figures of `python -m simulation evaluate` for dlrm-mlperf-v2 on 2x dgx-h100
    const r = recsysReport();
    r.ps = {
      available: true,
      faster: "all_to_all",
      speedup: 14.32208612654847,
      designs: [
        { design: "parameter_server", step_time_s: 0.07299113029038687, bytes_on_wire: 7706643627.31596 },
        { design: "all_to_all", step_time_s: 0.005096403529866026, bytes_on_wire: 3561123960.0 },
      ],
    };
    expect(psSummary(r)).toBe(
      "All-to-all is 14.3× faster than the parameter server: 5.10 ms vs 73.0 ms per step, moving 3.56 GB instead of 7.71 GB on the wire.",
    );
  });

  it("draws grouped bars: ms per design on the left, GB per design on the right", () => {
    const option = psChartOption(report);
    const series = asArray(option.series) as BarSeriesOption[];
    expect(series.map((s) => [s.name, s.xAxisIndex, s.data])).toEqual([
      ["Parameter server", 0, [80]],
      ["Parameter server", 1, [8]],
      ["All-to-all", 0, [20]],
      ["All-to-all", 1, [4]],
    ]);
    expect(series.map((s) => (s.label as Fmt).formatter())).toEqual(["80.0 ms", "8.00 GB", "20.0 ms", "4.00 GB"]);
    const y = asArray(option.yAxis) as { name: string; axisLabel: Fmt }[];
    expect(y.map((a) => a.name)).toEqual([`${PS_TIME_AXIS_NAME} (ms)`, `${PS_BYTES_AXIS_NAME} (GB)`]);
    expect(y[0].axisLabel.formatter(50)).toBe("50 ms");
    expect(y[1].axisLabel.formatter(0.5)).toBe("0.50 GB");
    // a design of seconds and terabytes: the axes read in s and TB, not 2,500 ms and 3,000 GB
    const big = recsysReport();
    for (const d of big.ps!.designs as { step_time_s: number; bytes_on_wire: number }[]) { d.step_time_s *= 50; d.bytes_on_wire *= 500; }
    const o2 = psChartOption(big);
    const y2 = asArray(o2.yAxis) as { name: string; axisLabel: Fmt }[];
    expect(y2.map((a) => a.name)).toEqual([`${PS_TIME_AXIS_NAME} (s)`, `${PS_BYTES_AXIS_NAME} (TB)`]);
    expect((asArray(o2.series) as BarSeriesOption[]).map((s) => s.data)).toEqual([[4], [4], [1], [2]]);
    expect(y2[0].axisLabel.formatter(2.5)).toBe("2.5 s");
    const legend = asArray(option.legend)[0] as Fmt;
    expect(legend.formatter("All-to-all")).toBe("All-to-all (faster)");
    expect(legend.formatter("Parameter server")).toBe("Parameter server");
  });

  it("lists the traffic in the tooltip", () => {
    const tooltip = asArray(psChartOption(report).tooltip)[0] as Fmt;
    const ps = tooltip.formatter({ seriesName: "Parameter server" });
    expect(ps).toContain("Bytes on wire: 8.00 GB (7.45 GiB) per step");
    expect(ps).toContain("PS pull (rows to workers): 3.00 GB");
    expect(ps).toContain("Busiest link: PS server NIC in, 50.0 ms of transfers");
    expect(ps).not.toContain("Between nodes");
    expect(tooltip.formatter({ seriesName: "All-to-all" })).toContain("Between nodes: 3.00 GB");
  });

  it("writes traffic that rounds to nothing as < 0.01 GB", () => {
    expect(trafficGB(7.47)).toBe("< 0.01 GB");
    expect(trafficGB(3e9)).toBe("3.00 GB");
    expect(trafficGB(0)).toBe("0.00 GB");
  });

  it("is empty when the engine did not compare", () => {
    const r = recsysReport();
    r.ps = { available: false, designs: [], notes: ["Parameter server not compared: it needs the NIC bandwidth."] };
    expect(hasPsComparison(r)).toBe(false);
    expect(psDesignRows(r)).toEqual([]);
    expect(psSummary(r)).toBeNull();
    expect(psChartOption(r)).toEqual({ series: [] });
  });
});

describe("storedAxisLabel", () => {
  it("says when a tier has no capacity limit", () => {
    const row = { ...embeddingTierRows(recsysReport())[1], capacityBytes: null };
    expect(storedAxisLabel(row)).toBe("DDR · 2 nodes\n600 / no limit");
  });
});

describe("a step of milliseconds (a recommendation model) on the step chart and table", () => {
  it("labels parts in ms, ticks with enough decimals, table seconds with 3 significant digits", async () => {
    const { stepBreakdownOption, segmentText } = await import("./step_series");
    const { breakdownSegments } = await import("../step");
    const { formatSecondsSig } = await import("../units");
    const r = recsysReport(); // 6 ms compute + 10 ms exposed comm + 4 ms exposed lookups = 20 ms
    const series = asArray(stepBreakdownOption(r).series) as BarSeriesOption[];
    expect(series.map((s) => (s.label as Fmt).formatter())).toEqual(["6.00 ms", "10.0 ms", "4.00 ms"]);
    const x = asArray(stepBreakdownOption(r).xAxis)[0] as { axisLabel: Fmt };
    expect(x.axisLabel.formatter(0.00001)).toBe("0.00001 s");
    expect(segmentText(breakdownSegments(r)[0])).toBe("Compute: 6.00 ms (30.0% of the step)");
    expect(formatSecondsSig(0.005096403529866026)).toBe("0.00510 s");
    expect(formatSecondsSig(7.25e-4)).toBe("0.000725 s");
    expect(formatSecondsSig(1.5)).toBe("1.500 s");
  });
});

describe("showsPsSection", () => {
  it("shows parameter server vs all-to-all for a recommendation model only", () => {
    expect(showsPsSection(recsysReport())).toBe(true);
    // an MoE LLM's report (mixtral-8x7b, EP 8): the engine's expert-PS comparison in `ps`,
    // `embedding` left empty ({}), as evaluate writes it for a model without recsys
    const moe = {
      ...recsysReport(), embedding: {} as RecsysReport["embedding"],
      ps: { available: true, designs: [{ design: "expert_parameter_server", step_time_s: 36.1 }] },
    } as unknown as RecsysReport;
    expect(hasPsComparison(moe)).toBe(true);
    expect(showsPsSection(moe)).toBe(false);
    expect(showsPsSection({ ...moe, embedding: null })).toBe(false);
  });
});
