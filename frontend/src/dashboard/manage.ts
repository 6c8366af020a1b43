// Rename and Delete of what the owner saved (a scenario, comparison, sweep or plan), on its
// page: PATCH `{name}` and DELETE on its API URL. The server checks everything again; a
// refusal is shown naming the field it is about (`name: ...`), a 409 with what uses it.

import { ApiError, apiFetch } from "../api";

/** The models' name columns (CharField(max_length=200)); the API refuses longer names. */
export const NAME_MAX_LENGTH = 200;

/** Unicode bidirectional controls the API refuses in names (tierlab/api.py BIDI_CONTROLS). */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/;

/** The name to send (spaces around it dropped, as the server does), or why not. */
export function checkName(raw: string): { name: string } | { error: string } {
  const name = raw.trim();
  if (!name) return { error: "name: give a name (1 to 200 characters)" };
  if (name.length > NAME_MAX_LENGTH) {
    return { error: `name: at most ${NAME_MAX_LENGTH} characters, this one has ${name.length}` };
  }
  const bidi = BIDI_CONTROLS.exec(name);
  if (bidi) {
    const code = bidi[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    return { error: `name: contains the Unicode bidirectional control U+${code}; remove it` };
  }
  return { name };
}

/** What a failed rename or delete shows: `field: message` for a 400, the server's detail
 * otherwise (a 409 names the comparisons that use a scenario; a 403 says whose it is). */
export function errorText(err: unknown): string {
  if (err instanceof ApiError) {
    const [field, messages] = Object.entries(err.fieldErrors)[0] ?? ["", [`HTTP ${err.status}`]];
    return field ? `${field}: ${messages[0]}` : messages[0];
  }
  return err instanceof Error ? err.message : String(err);
}

/** The question the Delete button asks first. */
export function confirmText(kind: string, name: string): string {
  const what: Record<string, string> = {
    scenario: "its runs go with it; a queued or running one is cancelled",
    comparison: "its scenarios and their runs stay",
    sweep: "a queued or running sweep is cancelled first",
    plan: "a queued or running plan is cancelled first; scenarios saved from it stay",
  };
  return `Delete the ${kind} “${name}”? This cannot be undone (${what[kind] ?? "it is gone for everyone"}).`;
}

export function rename(apiUrl: string, name: string): Promise<{ name: string }> {
  return apiFetch<{ name: string }>(apiUrl, { method: "PATCH", body: { name } });
}

export async function remove(apiUrl: string): Promise<void> {
  await apiFetch<null>(apiUrl, { method: "DELETE" });
}
