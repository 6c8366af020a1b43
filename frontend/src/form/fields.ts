// The form controls both the scenario form and its recommendation-model inputs are built
// from (DOM): a labelled field with its inline error and help, selects and number inputs,
// and a grid row. One set, so every input looks, names and reports errors alike.

import { h } from "../dom";
import { PLACEHOLDERS } from "./scenario";

export type Control = HTMLInputElement | HTMLSelectElement;

/** The id of the control named `name` ("training.seq_len" -> "f-training-seq_len"). */
export const idFor = (name: string) => `f-${name.replace(/[^\w]/g, "-")}`;

export interface FieldOptions {
  unit?: string;
  help?: string;
}

/** A labelled control with an (initially empty) inline error and optional help text. */
export function field(name: string, label: string, control: Control, opts: FieldOptions = {}): HTMLElement {
  const id = idFor(name);
  control.id = id;
  control.name = name;
  const error = h("small", { class: "field-error", id: `${id}-error`, "data-error-for": name, hidden: true });
  const help = opts.help ? h("small", { id: `${id}-help`, class: "field-help" }, opts.help) : null;
  if (help) control.setAttribute("aria-describedby", help.id);
  const unit = opts.unit ? h("span", { class: "unit" }, ` (${opts.unit})`) : null;
  const checkbox = control instanceof HTMLInputElement && control.type === "checkbox";
  return h(
    "div",
    { class: "field", "data-field": name },
    checkbox ? h("label", { for: id }, control, ` ${label}`, unit) : h("label", { for: id }, label, unit),
    checkbox ? null : control,
    error,
    help,
  );
}

/** `field` with the label looked up in `labels` by the control's name (the name if absent). */
export function labelledFields(labels: Record<string, string>) {
  return (name: string, control: Control, opts: FieldOptions = {}): HTMLElement =>
    field(name, labels[name] ?? name, control, opts);
}

/** Fields side by side (Pico's grid), stacking on a narrow screen. */
export function grid(...children: (HTMLElement | null)[]): HTMLElement {
  return h("div", { class: "grid" }, children);
}

export function select(options: [string, string][], attrs: Record<string, string | boolean> = {}): HTMLSelectElement {
  const el = h("select", attrs);
  for (const [value, label] of options) el.append(h("option", { value }, label));
  return el;
}

export function integer(attrs: Record<string, string | number | boolean> = {}): HTMLInputElement {
  return h("input", { type: "number", inputmode: "numeric", min: 1, step: 1, ...attrs });
}

/** A number input that takes fractions and exponents ("0.55", "1e-5"); blank = the engine's default. */
export function decimal(name: string, attrs: Record<string, string | number | boolean> = {}): HTMLInputElement {
  return h("input", { type: "number", inputmode: "decimal", step: "any", placeholder: PLACEHOLDERS[name] ?? "", ...attrs });
}

/** Replace a select's options, keeping its value when the new options still hold it. */
export function fillSelect(el: HTMLSelectElement, options: [string, string][], keep?: string): void {
  const previous = keep ?? el.value;
  el.replaceChildren(...options.map(([value, label]) => h("option", { value }, label)));
  if (options.some(([v]) => v === previous)) el.value = previous;
}
