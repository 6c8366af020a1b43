// The owner's panels of a page: the share panel's Copy buttons (the panel itself is
// server-rendered, so creating and revoking links works without JavaScript), and Rename /
// Delete (PATCH and DELETE on the object's API URL; hidden without JavaScript).

import "../base";
import "../styles/dashboard.css";
import { checkName, confirmText, errorText, remove, rename } from "../dashboard/manage";

/** Copies the input's text: the Clipboard API (given a second), else select + the old command. */
async function copyText(input: HTMLInputElement): Promise<boolean> {
  const viaApi = navigator.clipboard?.writeText(input.value).then(() => true, () => false);
  const late = new Promise<boolean>((resolve) => window.setTimeout(() => resolve(false), 1000));
  if (viaApi && (await Promise.race([viaApi, late]))) return true;
  // No clipboard permission (or an insecure origin): select the text and use the old command.
  input.focus();
  input.select();
  try {
    return document.execCommand("copy");
  } catch {
    return false;
  }
}

for (const button of document.querySelectorAll<HTMLButtonElement>("button.copy-link")) {
  button.addEventListener("click", async () => {
    const input = document.getElementById(button.dataset.copyTarget ?? "") as HTMLInputElement | null;
    if (!input) return;
    const ok = await copyText(input);
    const status = document.getElementById(button.getAttribute("aria-describedby") ?? "");
    if (status) status.textContent = ok ? "Copied to the clipboard." : "Select the link and copy it (Ctrl+C).";
    if (!ok) input.select();
  });
}

// A read-only link field selects all of itself on focus, so it can be copied by hand.
for (const input of document.querySelectorAll<HTMLInputElement>("input.share-url")) {
  input.addEventListener("focus", () => input.select());
}

// Rename / Delete: the owner's only (the server renders the panel on their page alone, and
// answers 403 to anyone else). Errors name the field: "name: ...".
function setUpManage(panel: HTMLElement): void {
  const form = panel.querySelector<HTMLFormElement>("#rename-form");
  const input = panel.querySelector<HTMLInputElement>("#rename-name");
  const status = panel.querySelector<HTMLElement>("#manage-status");
  const del = panel.querySelector<HTMLButtonElement>("#delete");
  const apiUrl = panel.dataset.apiUrl ?? "";
  const kind = panel.dataset.kind ?? "";
  if (!form || !input || !status || !del || !apiUrl) return;
  const show = (text: string, error: boolean) => {
    status.textContent = text;
    status.classList.toggle("error", error);
    input.setAttribute("aria-invalid", String(error && text.startsWith("name:")));
  };
  let saved = input.value;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const checked = checkName(input.value);
    if ("error" in checked) return show(checked.error, true);
    try {
      const renamed = await rename(apiUrl, checked.name);
      const heading = document.querySelector("h1");
      if (heading) heading.textContent = renamed.name;
      document.title = document.title.replace(saved, renamed.name);
      input.value = saved = renamed.name;
      show(`Renamed to “${renamed.name}”.`, false);
    } catch (err) {
      show(errorText(err), true);
    }
  });
  del.addEventListener("click", async () => {
    if (!window.confirm(confirmText(kind, saved))) return;
    del.disabled = true;
    try {
      await remove(apiUrl);
      window.location.assign(panel.dataset.afterDeleteUrl ?? "/");
    } catch (err) {
      del.disabled = false;
      show(errorText(err), true);
    }
  });
  panel.hidden = false;
}

const managePanel = document.getElementById("manage");
if (managePanel) setUpManage(managePanel);

// A list row's Delete (the owner's rows): asks first, then the row goes; a refusal (a
// scenario that comparisons use) is shown beside the button.
for (const button of document.querySelectorAll<HTMLButtonElement>("button.delete-row")) {
  const status = document.createElement("small");
  status.className = "manage-status error";
  status.setAttribute("aria-live", "polite");
  button.after(status);
  button.addEventListener("click", async () => {
    if (!window.confirm(confirmText(button.dataset.kind ?? "", button.dataset.name ?? ""))) return;
    button.disabled = true;
    try {
      await remove(button.dataset.apiUrl ?? "");
      button.closest("tr")?.remove();
    } catch (err) {
      button.disabled = false;
      status.textContent = errorText(err);
    }
  });
  button.hidden = false;
}
