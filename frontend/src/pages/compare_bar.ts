// The scenario list's "Compare checked" (server-rendered; works without JavaScript): with
// fewer than 2 or more than 8 boxes ticked it says so next to the button instead of
// sending the form, so the ticks stay; and after the server refused a form (sent before
// this script ran) it ticks again the boxes it hands back in the URL.

import { compareProblem, tickedFromQuery } from "../dashboard/compare_select";

function enhance(form: HTMLFormElement): void {
  const boxes = () => [...document.querySelectorAll<HTMLInputElement>(`input[type=checkbox][form="${form.id}"]`)];

  const back = tickedFromQuery(window.location.search);
  if (back.length) {
    for (const box of boxes()) if (back.includes(box.value)) box.checked = true;
    const url = new URL(window.location.href);
    url.searchParams.delete("compare");
    window.history.replaceState(null, "", url);
  }

  const problem = document.createElement("p");
  problem.id = "compare-problem";
  problem.className = "error";
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  form.append(problem);

  form.addEventListener("submit", (event) => {
    const text = compareProblem(boxes().filter((b) => b.checked).length);
    problem.hidden = text === null;
    problem.textContent = text ?? "";
    if (text !== null) event.preventDefault();
  });
  // a tick changed: the message may no longer hold
  document.addEventListener("change", (event) => {
    if (boxes().includes(event.target as HTMLInputElement)) problem.hidden = true;
  });
}

const form = document.getElementById("compare-form");
if (form instanceof HTMLFormElement) enhance(form);
