// "Duplicate": the builder page holds a copy of a scenario as its first example; once the
// form is ready this picks that example, so every input starts from the copy.

function prefill(root: HTMLElement): void {
  const index = root.dataset.prefillExample;
  const select = document.getElementById("f-example") as HTMLSelectElement | null;
  if (index === undefined || !select) return;
  select.value = index;
  select.dispatchEvent(new Event("change", { bubbles: true }));
  root.dataset.prefilled = "true";
}

const root = document.getElementById("scenario-form-root");
if (root) {
  if (root.dataset.ready === "true") prefill(root);
  else {
    const observer = new MutationObserver(() => {
      if (root.dataset.ready === "true") {
        observer.disconnect();
        prefill(root);
      }
    });
    observer.observe(root, { attributes: true, attributeFilter: ["data-ready"] });
  }
}
