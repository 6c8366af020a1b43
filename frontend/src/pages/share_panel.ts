// The share panel's Copy buttons (the panel itself is server-rendered, so creating and
// revoking links works without JavaScript).

import "../base";
import "../styles/dashboard.css";

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
