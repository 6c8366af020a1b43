// The scenario form's recommendation-model mode (the scenario's `recsys` section): its
// inputs, form values <-> the section, and API error keys -> inputs. Pure, no DOM, and
// no import of ./scenario (which imports this), so it is unit-tested on its own.
//
// Input names are the dotted scenario paths ("recsys.zipf_alpha"), so a 400's
// {"scenario.recsys.zipf_alpha": [...]} lands next to its input. Two exceptions: the
// model-kind switch ("model_kind", not sent) and the PMEM capacity, whose input is in GB
// under the path of the bytes it becomes ("recsys.tiers.pmem.capacity_bytes").

type Values = Record<string, string | boolean>;

export const MODEL_KIND = "model_kind";

export const MODEL_KINDS: [string, string][] = [
  ["transformer", "Transformer (LLM)"],
  ["recsys", "Recommendation model (DLRM: embedding tables + MLPs)"],
];

export const RECSYS_PRESETS: [string, string][] = [
  ["dlrm-mlperf-v1", "DLRM, MLPerf v1 — 188 M rows, 96.1 GB"],
  ["dlrm-mlperf-v2", "DLRM-DCNv2, MLPerf v2 — 204 M rows, 104.5 GB"],
];

/** Short names for the scenario name the form suggests. */
export const RECSYS_PRESET_SHORT: Record<string, string> = {
  "dlrm-mlperf-v1": "DLRM (MLPerf v1)",
  "dlrm-mlperf-v2": "DLRM-DCNv2 (MLPerf v2)",
};

/** What each preset sets that the form can change (shown as placeholders). */
export const RECSYS_PRESET_DEFAULTS: Record<string, { batch_size: number; embedding_optimizer: string }> = {
  "dlrm-mlperf-v1": { batch_size: 2048, embedding_optimizer: "sgd" },
  "dlrm-mlperf-v2": { batch_size: 65536, embedding_optimizer: "adagrad" },
};

export const EMBEDDING_OPTIMIZERS: [string, string][] = [
  ["", "the preset's (v1: SGD, v2: Adagrad)"],
  ["sgd", "SGD (no state: 0 B per row)"],
  ["adagrad", "Adagrad (+4 B per element of a row)"],
  ["rowwise_adagrad", "Row-wise Adagrad (+4 B per row)"],
];

/** Where embedding rows may live, hottest first (the engine's TIER_ORDER). */
export const RECSYS_TIERS: [string, string][] = [
  ["hbm", "GPU HBM"],
  ["ddr", "CPU DDR"],
  ["cxl", "CXL memory"],
  ["pmem", "Optane PMem"],
  ["nvme", "NVMe"],
];

export const tierInput = (tier: string) => `recsys.tiers.${tier}`;
export const PMEM_CAPACITY = "recsys.tiers.pmem.capacity_bytes";
/** The engine's PMEM default: 2 sockets x 6 DIMMs x 256 GB per node. */
export const PMEM_DEFAULT_GB = 3072;

export const RECSYS_INTEGER_FIELDS = ["recsys.batch_size", "recsys.ps.servers"] as const;
export const RECSYS_DECIMAL_FIELDS = ["recsys.zipf_alpha", PMEM_CAPACITY] as const;

export const RECSYS_FIELD_LABELS: Record<string, string> = {
  [MODEL_KIND]: "Model kind",
  "recsys.preset": "Recommendation model",
  "recsys.batch_size": "Global batch size",
  "recsys.zipf_alpha": "Zipf α",
  "recsys.embedding_optimizer": "Embedding optimizer",
  "recsys.tiers.hbm": "Embeddings in GPU HBM",
  "recsys.tiers.ddr": "Embeddings in CPU DDR",
  "recsys.tiers.cxl": "Embeddings in CXL memory",
  "recsys.tiers.pmem": "Embeddings in Optane PMem",
  "recsys.tiers.nvme": "Embeddings on NVMe",
  [PMEM_CAPACITY]: "PMEM capacity per node",
  "recsys.ps.servers": "Parameter servers",
};

export const RECSYS_DEFAULT_VALUES: Values = {
  [MODEL_KIND]: "transformer",
  "recsys.preset": "dlrm-mlperf-v2",
  "recsys.batch_size": "",
  "recsys.zipf_alpha": "",
  "recsys.embedding_optimizer": "",
  "recsys.tiers.hbm": true,
  "recsys.tiers.ddr": true,
  "recsys.tiers.cxl": false,
  "recsys.tiers.pmem": false,
  "recsys.tiers.nvme": true,
  [PMEM_CAPACITY]: "",
  "recsys.ps.servers": "",
};

export const RECSYS_PLACEHOLDERS: Record<string, string> = {
  "recsys.zipf_alpha": "1.0 (assumed)",
  [PMEM_CAPACITY]: `${PMEM_DEFAULT_GB} (2 × 6 × 256 GB)`,
  "recsys.ps.servers": "one per node",
};

/** The batch-size placeholder: the preset's batch. */
export function batchPlaceholder(preset: string): string {
  const b = RECSYS_PRESET_DEFAULTS[preset]?.batch_size;
  return b ? `${b.toLocaleString("en-US")} (the preset's)` : "";
}

export const isRecsys = (values: Values) => values[MODEL_KIND] === "recsys";

const isObject = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);

/** A number, the text as typed when it is not one (the engine names the field), or undefined when blank. */
function numberOrText(value: string | boolean | undefined, scale = 1): number | string | undefined {
  if (typeof value !== "string") return undefined;
  const text = value.trim();
  if (text === "") return undefined;
  const n = Number(text);
  if (!Number.isFinite(n)) return text;
  return scale === 1 ? n : Math.round(n * scale);
}

/** Keys of a preset's model: dropped from an example's section when a preset is chosen. */
const MODEL_KEYS = ["tables", "bottom_mlp", "top_mlp", "interaction", "dcn_num_layers", "dcn_low_rank_dim", "name", "source"];

/**
 * The `recsys` section for the form's values. `base` is the example's section: what the
 * form has no input for (tier figures, PS replication, a custom table set) is kept from it.
 */
export function recsysSection(values: Values, base?: unknown): Record<string, unknown> {
  const baseRecsys = isObject(base) ? base : {};
  const preset = typeof values["recsys.preset"] === "string" ? values["recsys.preset"] : "";
  const out: Record<string, unknown> = { ...baseRecsys };
  if (preset !== "") {
    for (const k of MODEL_KEYS) delete out[k];
    out.preset = preset;
  }
  const set = (key: string, v: unknown) => {
    if (v === undefined || v === "") delete out[key];
    else out[key] = v;
  };
  set("batch_size", numberOrText(values["recsys.batch_size"]));
  set("zipf_alpha", numberOrText(values["recsys.zipf_alpha"]));
  set("embedding_optimizer", values["recsys.embedding_optimizer"]);

  const baseTiers = isObject(baseRecsys.tiers) ? baseRecsys.tiers : {};
  const tiers: Record<string, unknown> = {};
  for (const [tier] of RECSYS_TIERS) {
    if (values[tierInput(tier)] !== true) continue;
    tiers[tier] = isObject(baseTiers[tier]) ? { ...baseTiers[tier] } : {};
  }
  const pmemBytes = numberOrText(values[PMEM_CAPACITY], 1e9);
  if (isObject(tiers.pmem) && pmemBytes !== undefined) tiers.pmem.capacity_bytes = pmemBytes;
  // Always explicit: the engine's default set (HBM + the node's tiers) is what the form starts with.
  out.tiers = tiers;

  const ps: Record<string, unknown> = isObject(baseRecsys.ps) ? { ...baseRecsys.ps } : {};
  const servers = numberOrText(values["recsys.ps.servers"]);
  if (servers === undefined) delete ps.servers;
  else ps.servers = servers;
  if (Object.keys(ps).length) out.ps = ps;
  else delete out.ps;
  return out;
}

/** Form values for a scenario's `recsys` section; {} when it has none or also has a transformer. */
export function recsysValues(scenario: Record<string, unknown>): Values {
  const r = scenario.recsys;
  if (!isObject(r) || isObject(scenario.model) || typeof scenario.model === "string") return {};
  const v: Values = { ...RECSYS_DEFAULT_VALUES, [MODEL_KIND]: "recsys" };
  v["recsys.preset"] = typeof r.preset === "string" ? r.preset : "";
  const text = (x: unknown) => (typeof x === "number" || typeof x === "string" ? String(x) : "");
  v["recsys.batch_size"] = text(r.batch_size);
  v["recsys.zipf_alpha"] = text(r.zipf_alpha);
  v["recsys.embedding_optimizer"] = typeof r.embedding_optimizer === "string" ? r.embedding_optimizer : "";
  if (isObject(r.tiers)) {
    for (const [tier] of RECSYS_TIERS) v[tierInput(tier)] = tier in r.tiers;
    const pmem = r.tiers.pmem;
    if (isObject(pmem) && typeof pmem.capacity_bytes === "number") v[PMEM_CAPACITY] = String(pmem.capacity_bytes / 1e9);
  }
  if (isObject(r.ps)) v["recsys.ps.servers"] = text(r.ps.servers);
  return v;
}

/**
 * The input an API error key (without its "scenario." prefix) belongs to, for keys under
 * `recsys`; null for other keys. Settings without an input point at the nearest one.
 */
export function recsysInputForErrorKey(key: string): string | null {
  if (key !== "recsys" && !key.startsWith("recsys.")) return null;
  if (key in RECSYS_DEFAULT_VALUES) return key;
  if (key === "recsys.tiers") return tierInput("hbm");
  const tier = /^recsys\.tiers\.(\w+)/.exec(key);
  if (tier) return RECSYS_TIERS.some(([t]) => t === tier[1]) ? tierInput(tier[1]) : tierInput("hbm");
  if (key.startsWith("recsys.ps")) return "recsys.ps.servers";
  return "recsys.preset";
}

/** The tiers checked, as words: "HBM + DDR + NVMe". */
export function checkedTiers(values: Values): string[] {
  const short: Record<string, string> = { hbm: "HBM", ddr: "DDR", cxl: "CXL", pmem: "PMEM", nvme: "NVMe" };
  return RECSYS_TIERS.filter(([t]) => values[tierInput(t)] === true).map(([t]) => short[t]);
}

/** A default name: "DLRM-DCNv2 (MLPerf v2) · 2× NVIDIA DGX H100 · embeddings on HBM + DDR + NVMe". */
export function suggestRecsysName(values: Values, nodeName: string): string {
  const preset = String(values["recsys.preset"] ?? "");
  const model = RECSYS_PRESET_SHORT[preset] ?? (preset || "custom recommendation model");
  const tiers = checkedTiers(values);
  return `${model} · ${values["cluster.num_nodes"]}× ${nodeName} · embeddings on ${tiers.length ? tiers.join(" + ") : "no tier"}`;
}
