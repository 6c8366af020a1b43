// The scenario form's recommendation-model inputs (DOM). The model-kind switch shows either
// the transformer's inputs or these; the hidden ones are disabled, so the browser neither
// validates nor focuses them, and buildRequest does not send them (../form/recsys.ts).

import "../styles/recsys.css";

import { h } from "../dom";
import { type Control, decimal, field, grid, integer, labelledFields, select } from "../form/fields";
import {
  EMBEDDING_OPTIMIZERS,
  MODEL_KIND,
  MODEL_KINDS,
  PMEM_CAPACITY,
  RECSYS_FIELD_LABELS,
  RECSYS_PLACEHOLDERS,
  RECSYS_PRESETS,
  RECSYS_TIERS,
  batchPlaceholder,
  tierInput,
} from "../form/recsys";

/** Inputs (by name) whose block belongs to the transformer only: hidden in recommendation mode. */
const TRANSFORMER_BLOCKS = [
  "training.micro_batch_size", // the Training fieldset
  "strategy.kind", // Parallelism and sharding
  "checkpoint.target", // Checkpoint
  "training.compute_efficiency", // Advanced (a <details>)
  "convention", // Accounting
];

export interface RecsysForm {
  /** The model-kind switch (goes first in "Model and hardware"). */
  kindField: HTMLElement;
  /** The recommendation model's fieldset. */
  fieldset: HTMLFieldSetElement;
  kind: HTMLSelectElement;
  /** Show the inputs of the chosen kind; call after values are written. */
  sync(): void;
  /** Mark the tiers the chosen node template lacks. */
  syncNode(nodeTiers: string[] | null): void;
}

/** Hides (and disables) a block, or shows it again; a <details> has its controls disabled one by one. */
function setOff(el: HTMLElement, off: boolean): void {
  el.hidden = off;
  if (el instanceof HTMLFieldSetElement) {
    el.disabled = off;
    return;
  }
  for (const c of el.querySelectorAll<Control>("input, select, textarea")) {
    if (off && !c.disabled) {
      c.disabled = true;
      c.dataset.offByKind = "true";
    } else if (!off && c.dataset.offByKind) {
      c.disabled = false;
      delete c.dataset.offByKind;
    }
  }
}

export function recsysForm(): RecsysForm {
  const L = RECSYS_FIELD_LABELS;
  const f = labelledFields(L);

  const kind = select(MODEL_KINDS);
  const kindField = f(MODEL_KIND, kind, { unit: "what is trained" });

  const c = {
    preset: select(RECSYS_PRESETS),
    batch: integer({ placeholder: batchPlaceholder("dlrm-mlperf-v2") }),
    zipf: decimal("recsys.zipf_alpha"), // no min: a negative α goes to the engine, whose message shows inline
    optimizer: select(EMBEDDING_OPTIMIZERS),
    pmemCapacity: decimal(PMEM_CAPACITY),
    servers: integer({ placeholder: RECSYS_PLACEHOLDERS["recsys.ps.servers"] }),
  };
  const tierBoxes = new Map<string, HTMLInputElement>();
  const tierNotes = new Map<string, HTMLElement>();
  const tierFields = RECSYS_TIERS.map(([tier, label]) => {
    const box = h("input", { type: "checkbox" });
    tierBoxes.set(tier, box);
    const tierField = field(tierInput(tier), label, box);
    const note = h("small", { class: "tier-note", hidden: true }, "not in this node template: the engine's catalog figures");
    tierNotes.set(tier, note);
    tierField.querySelector("label")?.after(note);
    return tierField;
  });
  const pmemField = f(PMEM_CAPACITY, c.pmemCapacity, {
    unit: "GB per node, 1 GB = 1e9 bytes",
    help: "Blank = 3,072 GB: two sockets × six 256 GB Optane PMem 100 DIMMs.",
  });

  const fieldset = h(
    "fieldset",
    { id: "recsys-fieldset" },
    h("legend", null, h("strong", null, "Recommendation model")),
    grid(
      f("recsys.preset", c.preset, {
        unit: "preset: tables, MLPs, batch",
        help: "MLPerf's DLRM on Criteo 1TB: 26 tables of 128-dim fp32 rows; the stored bytes add the optimizer's state.",
      }),
      f("recsys.batch_size", c.batch, {
        unit: "samples per step",
        help: "Blank = the preset's batch.",
      }),
    ),
    grid(
      f("recsys.zipf_alpha", c.zipf, {
        unit: "skew of lookups, ≥ 0; for all tables",
        help: "0 = uniform; larger = a few hot rows take most lookups. Blank = 1.0, an assumption flagged in the report.",
      }),
      f("recsys.embedding_optimizer", c.optimizer, { unit: "state stored with each row" }),
    ),
    h("fieldset", { class: "recsys-tiers", id: "recsys-tiers" },
      h("legend", null, "Tiers the embedding rows may use ",
        h("span", { class: "unit" }, "(the hottest rows go to the fastest tier checked)")),
      h("div", { class: "recsys-tier-boxes" }, tierFields),
    ),
    pmemField,
    f("recsys.ps.servers", c.servers, {
      unit: "shards, one 400 Gb/s NIC each",
      help: "For the parameter-server design the report compares with all-to-all. Blank = one per node.",
    }),
  );

  const form = () => fieldset.closest("form");

  const syncPmem = () => {
    const on = tierBoxes.get("pmem")?.checked === true;
    pmemField.hidden = !on;
    c.pmemCapacity.disabled = !on;
  };

  const sync = () => {
    const recsys = kind.value === "recsys";
    setOff(fieldset, !recsys);
    const f = form();
    if (f) {
      for (const name of TRANSFORMER_BLOCKS) {
        const el = f.querySelector(`[data-field="${name}"]`);
        const block = el?.closest<HTMLElement>("fieldset, details");
        if (block && block !== fieldset) setOff(block, recsys);
      }
      for (const name of ["model.preset", "model.position_embedding"]) {
        const model = f.querySelector<HTMLElement>(`[data-field="${name}"]`);
        if (model) setOff(model, recsys);
      }
    }
    // An example with its own tables (no preset): keep them, say so.
    if (c.preset.selectedIndex === -1 && !c.preset.querySelector('option[value=""]')) {
      c.preset.prepend(h("option", { value: "" }, "custom tables (kept from the example)"));
      c.preset.value = "";
    }
    c.batch.placeholder = batchPlaceholder(c.preset.value);
    syncPmem();
    if (!recsys) c.pmemCapacity.disabled = true;
    fieldset.closest("form")?.setAttribute("data-model-kind", kind.value);
  };

  const syncNode = (nodeTiers: string[] | null) => {
    for (const [tier, note] of tierNotes) note.hidden = tier === "hbm" || nodeTiers === null || nodeTiers.includes(tier);
  };

  kind.addEventListener("change", sync);
  c.preset.addEventListener("change", () => {
    c.batch.placeholder = batchPlaceholder(c.preset.value);
  });
  tierBoxes.get("pmem")?.addEventListener("change", syncPmem);

  return { kindField, fieldset, kind, sync, syncNode };
}
