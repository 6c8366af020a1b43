import { afterEach, describe, expect, it, vi } from "vitest";

import { ApiError } from "../api";
import { NAME_MAX_LENGTH, checkName, confirmText, errorText, remove, rename } from "./manage";

describe("checkName", () => {
  it("drops the spaces around a name, as the server does", () => {
    expect(checkName("  Llama 70B on 64 H100 ")).toEqual({ name: "Llama 70B on 64 H100" });
    expect(checkName("مقارنة")).toEqual({ name: "مقارنة" });          // right-to-left letters are fine
  });
  it("refuses an empty, too long or bidi-reordered name, naming the field", () => {
    expect(checkName("   ")).toEqual({ error: "name: give a name (1 to 200 characters)" });
    expect(checkName("x".repeat(NAME_MAX_LENGTH))).toEqual({ name: "x".repeat(200) });
    expect(checkName("x".repeat(201))).toEqual({ error: "name: at most 200 characters, this one has 201" });
    expect(checkName("evil\u202Etxt")).toEqual({
      error: "name: contains the Unicode bidirectional control U+202E; remove it",
    });
  });
});

describe("errorText", () => {
  it("names the field of a 400 and shows a 409's detail", () => {
    expect(errorText(new ApiError(400, { name: ["This field may not be blank."] })))
      .toBe("name: This field may not be blank.");
    const inUse = { detail: "scenario 3 is used by 1 saved comparison: 'a' (id 2)", comparisons: [{ id: 2, name: "a" }] };
    expect(errorText(new ApiError(409, inUse))).toMatch(/^scenario 3 is used by 1 saved comparison/);
    expect(errorText(new Error("offline"))).toBe("offline");
  });
});

describe("confirmText", () => {
  it("says what goes with the object", () => {
    expect(confirmText("sweep", "grid")).toBe(
      "Delete the sweep “grid”? This cannot be undone (a queued or running sweep is cancelled first).",
    );
  });
});

describe("rename and remove", () => {
  afterEach(() => vi.unstubAllGlobals());
  it("PATCH {name} and DELETE the object's API URL with the CSRF token", async () => {
    const fetchMock = vi.fn(async (_url: string, init?: RequestInit) =>
      init?.method === "DELETE" ? new Response(null, { status: 204 }) : new Response(JSON.stringify({ name: "b" })));
    vi.stubGlobal("fetch", fetchMock);
    vi.stubGlobal("document", { cookie: "csrftoken=tok123", querySelector: () => null });
    expect(await rename("/api/v1/plans/4/", "b")).toEqual({ name: "b" });
    await remove("/api/v1/plans/4/");
    const [[url, patch], [, del]] = fetchMock.mock.calls as unknown as [string, RequestInit][];
    expect(url).toBe("/api/v1/plans/4/");
    expect(patch.method).toBe("PATCH");
    expect(patch.body).toBe('{"name":"b"}');
    expect((patch.headers as Record<string, string>)["X-CSRFToken"]).toBe("tok123");
    expect(del.method).toBe("DELETE");
    expect(del.body).toBeUndefined();
  });
  it("rejects with the server's field errors", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response(JSON.stringify({ name: ["too long"] }), { status: 400 })));
    vi.stubGlobal("document", { cookie: "", querySelector: () => null });
    await expect(rename("/api/v1/scenarios/1/", "x")).rejects.toMatchObject({ fieldErrors: { name: ["too long"] } });
  });
});
