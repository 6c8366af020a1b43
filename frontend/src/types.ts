// Shapes of what the REST API sends and takes. The engine's report is SI: bytes, seconds.

export const CATEGORIES = ["params", "grads", "optimizer", "activations", "buffers"] as const;
export type Category = (typeof CATEGORIES)[number];

export type TierKey = "hbm" | "ddr" | "nvme" | "cxl";
export type Scope = "per_gpu" | "per_node";

export interface Part {
  name: string;
  category: Category | string;
  bytes: number;
  note?: string | null;
  phase?: string | null;
}

export interface TierUsage {
  params_bytes?: number;
  grads_bytes?: number;
  optimizer_bytes?: number;
  activations_bytes?: number;
  buffers_bytes?: number;
  total_bytes: number;
  capacity_bytes: number;
  free_bytes?: number;
  present: boolean;
  parts?: Part[];
}

export interface Violation {
  tier: string;
  scope: string;
  required_bytes: number;
  capacity_bytes: number;
  over_bytes: number;
  message: string;
}

export interface Report {
  schema: number;
  engine_version?: string;
  fits: boolean;
  violations?: Violation[];
  model?: { name?: string; num_params?: number; num_layers?: number; hidden_size?: number };
  parallelism?: {
    num_gpus?: number;
    data_parallel?: number;
    tensor_parallel?: number;
    pipeline_parallel?: number;
    shard_degree?: number;
    global_batch_size?: number;
    micro_batch_size?: number;
    grad_accumulation_steps?: number;
  };
  convention?: {
    name: string;
    description?: string;
    bytes_per_param?: Record<string, number>;
  };
  memory: {
    per_gpu?: Partial<Record<TierKey, TierUsage>>;
    per_node?: Partial<Record<TierKey, TierUsage>>;
  };
  cross_checks?: Record<string, unknown>;
  notes?: string[];
}

export type RunStatus = "queued" | "pending" | "running" | "succeeded" | "failed" | string;

export interface Run {
  id: number | string;
  status: RunStatus;
  progress?: number | null;
  result?: Report | null;
  error?: string | null;
  scenario?: number | string | null;
  created_at?: string;
  started_at?: string | null;
  finished_at?: string | null;
}

export interface CatalogEntry {
  slug: string;
  name: string;
  spec: Record<string, unknown>;
  source?: string | null;
  notes?: string | null;
}

/** A scenario as the API takes it (schema 1); only what the form sets is typed. */
export interface ScenarioJSON {
  schema?: number;
  model: Record<string, unknown>;
  cluster: Record<string, unknown>;
  training?: Record<string, unknown>;
  strategy?: Record<string, unknown>;
  convention?: string;
  [key: string]: unknown;
}

export interface Example {
  name: string;
  scenario: ScenarioJSON;
}
