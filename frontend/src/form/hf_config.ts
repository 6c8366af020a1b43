// Importing a Hugging Face config.json into the scenario form (no DOM here: the page wires
// it). The text is parsed with JSON.parse (no eval, CSP holds) and sent to
// POST /api/v1/models/from-hf-config/, which answers the scenario's model section, the keys
// it ignored and notes (simulation/hf_config.py); the model becomes the form's custom model.

import type { FieldErrors } from "../api";
import type { ScenarioJSON } from "../types";

/** The API's limit on a config.json (tierlab/catalog/serializers.py HF_CONFIG_MAX_CHARS). */
export const HF_CONFIG_MAX_CHARS = 65_536;

export interface HfImport {
  model: Record<string, unknown>;
  ignored: string[];
  notes: string[];
}

/** The request body for pasted text, or what is wrong with it before anything is sent. */
export function hfConfigRequest(text: string): { config: Record<string, unknown> } | { error: string } {
  const trimmed = text.trim();
  if (!trimmed) return { error: "Paste a config.json or choose the file first." };
  if (trimmed.length > HF_CONFIG_MAX_CHARS) {
    return { error: `A config.json is a few KB; this is ${trimmed.length.toLocaleString("en")} characters.` };
  }
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch (err) {
    return { error: `This is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { error: "A config.json is one JSON object ({ … })." };
  }
  return { config: value as Record<string, unknown> };
}

/** The model list's entry for an imported model: "Qwen2ForCausalLM — 28 layers, hidden 3584 (config.json)". */
export function importedModelLabel(model: Record<string, unknown>): string {
  const name = typeof model.name === "string" && model.name ? model.name : "custom";
  const dims = [
    typeof model.num_layers === "number" ? `${model.num_layers} layers` : null,
    typeof model.hidden_size === "number" ? `hidden ${model.hidden_size}` : null,
    typeof model.num_experts === "number" && model.num_experts > 1
      ? `${model.num_experts} experts` +
        (typeof model.num_shared_experts === "number" && model.num_shared_experts > 0
          ? ` + ${model.num_shared_experts} shared` : "")
      : null,
    typeof model.first_dense_layers === "number" && model.first_dense_layers > 0
      ? `first ${model.first_dense_layers} dense` : null,
    typeof model.kv_lora_rank === "number" ? `latent attention (kv rank ${model.kv_lora_rank})` : null,
    typeof model.sliding_window === "number"
      ? `sliding window ${model.sliding_window}` +
        (model.sliding_window_layers === "alternate" ? " (alternate layers)" : "")
      : null,
  ].filter(Boolean);
  return `${name}${dims.length ? " — " + dims.join(", ") : ""} (imported config.json)`;
}

/** What the import did, line by line: what it set, the keys it ignored, the engine's notes. */
export function importSummary(r: HfImport): string[] {
  const lines = [`Imported ${importedModelLabel(r.model).replace(/ \(imported config\.json\)$/, "")}.`];
  if (r.ignored.length) lines.push(`Ignored (no model field): ${r.ignored.join(", ")}.`);
  for (const n of r.notes) lines.push(`Note: ${n}.`);
  return lines;
}

/** The example (or nothing) with the imported model as its custom model; the rest is kept. */
export function withImportedModel(base: ScenarioJSON | null, model: Record<string, unknown>): ScenarioJSON {
  return { ...(base ?? { schema: 1 }), model: { ...model } } as ScenarioJSON;
}

/** The API's 400 as lines: "hidden_size: must be a whole number…" (the config key named). */
export function hfConfigErrorLines(errors: FieldErrors): string[] {
  return Object.entries(errors).flatMap(([key, msgs]) => {
    const name = key === "config" || key === "" ? "" : key.replace(/^config\./, "");
    return msgs.map((m) => (name ? `${name}: ${m}` : m));
  });
}
