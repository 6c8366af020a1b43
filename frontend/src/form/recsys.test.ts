import { describe, expect, it } from "vitest";

import {
  MODEL_KIND,
  PMEM_CAPACITY,
  batchPlaceholder,
  recsysInputForErrorKey,
  recsysSection,
  recsysValues,
  suggestRecsysName,
} from "./recsys";
import {
  DEFAULT_VALUES,
  FIELD_LABELS,
  buildRequest,
  inputNameForErrorKey,
  settingsNotOnForm,
  suggestName,
  valuesFromScenario,
} from "./scenario";

/** DLRM v2 on two DGX H100, as the browser test fills it. */
const values = {
  ...DEFAULT_VALUES,
  name: " DLRM v2 on two DGX ",
  [MODEL_KIND]: "recsys",
  "cluster.node": "dgx-h100",
  "cluster.num_nodes": "2",
  "cluster.gpus_per_node": "8",
  "recsys.preset": "dlrm-mlperf-v2",
};

describe("buildRequest in recommendation mode", () => {
  it("sends the recsys section and the cluster, and none of the transformer's inputs", () => {
    expect(buildRequest(values)).toEqual({
      name: "DLRM v2 on two DGX",
      scenario: {
        schema: 1,
        recsys: { preset: "dlrm-mlperf-v2", tiers: { hbm: {}, ddr: {}, nvme: {} } },
        cluster: { node: "dgx-h100", num_nodes: 2, gpus_per_node: 8 },
      },
    });
  });

  it("sends batch, Zipf α, optimizer, tiers, the PMEM capacity in bytes and the PS servers", () => {
    const { scenario } = buildRequest({
      ...values,
      "recsys.batch_size": "32768",
      "recsys.zipf_alpha": " 0.8 ",
      "recsys.embedding_optimizer": "rowwise_adagrad",
      "recsys.tiers.ddr": false,
      "recsys.tiers.cxl": true,
      "recsys.tiers.pmem": true,
      [PMEM_CAPACITY]: "1000", // GB
      "recsys.ps.servers": "4",
    });
    expect(scenario.recsys).toEqual({
      preset: "dlrm-mlperf-v2",
      batch_size: 32768,
      zipf_alpha: 0.8,
      embedding_optimizer: "rowwise_adagrad",
      tiers: { hbm: {}, cxl: {}, pmem: { capacity_bytes: 1e12 }, nvme: {} },
      ps: { servers: 4 },
    });
  });

  it("sends a bad number as it is, so the engine's message names the field", () => {
    const { scenario } = buildRequest({ ...values, "recsys.zipf_alpha": "-1", "recsys.batch_size": "lots" });
    expect(scenario.recsys).toMatchObject({ zipf_alpha: -1, batch_size: "lots" });
  });

  it("leaves the PMEM capacity out when PMEM is not checked, and sends an empty tier set as it is", () => {
    expect(recsysSection({ ...values, [PMEM_CAPACITY]: "500" }).tiers).toEqual({ hbm: {}, ddr: {}, nvme: {} });
    const none = { ...values, "recsys.tiers.hbm": false, "recsys.tiers.ddr": false, "recsys.tiers.nvme": false };
    expect(recsysSection(none).tiers).toEqual({});
  });

  it("keeps an example's settings that have no input; a chosen preset replaces its tables", () => {
    const base = {
      preset: "dlrm-mlperf-v1",
      tables: [{ name: "C1", rows: 10, dim: 128 }],
      bottom_mlp: [13, 128],
      tiers: { ddr: { capacity_bytes: 1e12 }, nvme: {} },
      ps: { replication: 2, servers: 3 },
      seed: 7,
    };
    const v = { ...values, "recsys.preset": "dlrm-mlperf-v1" };
    expect(recsysSection(v, base)).toEqual({
      preset: "dlrm-mlperf-v1",
      tiers: { hbm: {}, ddr: { capacity_bytes: 1e12 }, nvme: {} },
      ps: { replication: 2 }, // servers blank: one per node
      seed: 7,
    });
    // no preset chosen (a custom model from the example): its tables stay
    expect(recsysSection({ ...v, "recsys.preset": "" }, base)).toMatchObject({ tables: base.tables, bottom_mlp: [13, 128] });
  });

  it("keeps a transformer example's recsys section in transformer mode", () => {
    const base = { model: { preset: "llama2-7b" }, cluster: { node: "dgx-h100" }, recsys: { preset: "dlrm-mlperf-v1" } };
    const { scenario } = buildRequest({ ...values, [MODEL_KIND]: "transformer" }, base);
    expect(scenario.model).toEqual({ preset: "llama2-7b" });
    expect(scenario.recsys).toEqual({ preset: "dlrm-mlperf-v1" });
  });
});

describe("valuesFromScenario with a recsys section", () => {
  it("switches to recommendation mode and fills its inputs, PMEM in GB", () => {
    const v = valuesFromScenario({
      recsys: {
        preset: "dlrm-mlperf-v2", zipf_alpha: 0.8, batch_size: 4096,
        tiers: { hbm: {}, ddr: {}, pmem: { capacity_bytes: 1e12 }, nvme: {} }, ps: { servers: 2 },
      },
      cluster: { node: "dgx-h100", num_nodes: 1 },
    }, "Ex");
    expect(v).toMatchObject({
      name: "Ex", [MODEL_KIND]: "recsys", "recsys.preset": "dlrm-mlperf-v2", "recsys.zipf_alpha": "0.8",
      "recsys.batch_size": "4096", "recsys.tiers.hbm": true, "recsys.tiers.ddr": true, "recsys.tiers.cxl": false,
      "recsys.tiers.pmem": true, [PMEM_CAPACITY]: "1000", "recsys.ps.servers": "2", "cluster.num_nodes": "1",
    });
  });

  it("round-trips through buildRequest", () => {
    const req = buildRequest({ ...values, "recsys.zipf_alpha": "1.2", "recsys.tiers.pmem": true, [PMEM_CAPACITY]: "250", "recsys.ps.servers": "2" });
    expect(buildRequest(valuesFromScenario(req.scenario, req.name), req.scenario).scenario).toEqual(req.scenario);
  });

  it("stays in transformer mode for a scenario with a model", () => {
    expect(recsysValues({ model: { preset: "llama2-7b" }, recsys: { preset: "dlrm-mlperf-v1" } })).toEqual({});
    expect(valuesFromScenario({ model: { preset: "llama2-7b" }, cluster: {} })[MODEL_KIND]).toBe("transformer");
  });

  it("names only the settings without an input", () => {
    expect(settingsNotOnForm({
      recsys: { preset: "dlrm-mlperf-v2", zipf_alpha: 0.9, tiers: { hbm: {}, ddr: { capacity_bytes: 1e12 } }, ps: { replication: 2 } },
      cluster: { node: "dgx-h100", num_nodes: 2 },
    })).toEqual(["recsys.tiers.ddr.capacity_bytes", "recsys.ps.replication"]);
  });
});

describe("recsys error keys and labels", () => {
  it("maps the engine's recsys fields onto inputs", () => {
    expect(inputNameForErrorKey("scenario.recsys.zipf_alpha")).toBe("recsys.zipf_alpha");
    expect(inputNameForErrorKey("scenario.recsys.batch_size")).toBe("recsys.batch_size");
    expect(inputNameForErrorKey("scenario.recsys.tiers.pmem.capacity_bytes")).toBe(PMEM_CAPACITY);
    expect(inputNameForErrorKey("scenario.recsys.tiers.cxl.latency_s")).toBe("recsys.tiers.cxl");
    expect(inputNameForErrorKey("scenario.recsys.tiers")).toBe("recsys.tiers.hbm");
    expect(inputNameForErrorKey("scenario.recsys.ps.replication")).toBe("recsys.ps.servers");
    expect(inputNameForErrorKey("scenario.recsys.tables.3.rows")).toBe("recsys.preset");
    expect(inputNameForErrorKey("scenario.recsys")).toBe("recsys.preset");
    expect(recsysInputForErrorKey("training.seq_len")).toBeNull();
    expect(FIELD_LABELS["recsys.zipf_alpha"]).toBe("Zipf α");
  });

  it("suggests a name from the preset, the nodes and the tiers", () => {
    const nodes = [{ slug: "dgx-h100", name: "NVIDIA DGX H100", spec: {} }];
    expect(suggestName(values, [], nodes)).toBe("DLRM-DCNv2 (MLPerf v2) · 2× NVIDIA DGX H100 · embeddings on HBM + DDR + NVMe");
    expect(suggestRecsysName({ ...values, "recsys.tiers.pmem": true, "recsys.tiers.nvme": false }, "X"))
      .toBe("DLRM-DCNv2 (MLPerf v2) · 2× X · embeddings on HBM + DDR + PMEM");
    expect(batchPlaceholder("dlrm-mlperf-v2")).toBe("65,536 (the preset's)");
    expect(batchPlaceholder("")).toBe("");
  });
});
