import { afterEach, describe, expect, it, vi } from "vitest";

import { ApiError, apiFetch, flattenErrors, getCookie, getList } from "./api";

async function rejection(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    return e as ApiError;
  }
  throw new Error("expected a rejection");
}

describe("getCookie", () => {
  it("finds a cookie among others and decodes it", () => {
    expect(getCookie("csrftoken", "sessionid=abc; csrftoken=t%2Bk; other=1")).toBe("t+k");
    expect(getCookie("missing", "a=1")).toBeNull();
  });
});

describe("flattenErrors", () => {
  it("keeps dotted keys as the API sends them", () => {
    expect(flattenErrors({ "scenario.training.global_batch_size": ["must divide"], name: ["required"] })).toEqual({
      "scenario.training.global_batch_size": ["must divide"],
      name: ["required"],
    });
  });
  it("flattens nested objects and lone strings", () => {
    expect(flattenErrors({ scenario: { cluster: { num_nodes: "must be at least 1" } } })).toEqual({
      "scenario.cluster.num_nodes": ["must be at least 1"],
    });
  });
  it("moves a ScenarioError text's field into the key", () => {
    expect(flattenErrors({ scenario: ["training.global_batch_size: must be a multiple of 16"] })).toEqual({
      "scenario.training.global_batch_size": ["must be a multiple of 16"],
    });
  });
  it("puts detail and non_field_errors under the empty key", () => {
    expect(flattenErrors({ detail: "Authentication credentials were not provided." })).toEqual({
      "": ["Authentication credentials were not provided."],
    });
    expect(flattenErrors({ non_field_errors: ["bad"] })).toEqual({ "": ["bad"] });
    expect(flattenErrors({ body: ["JSON parse error"] })).toEqual({ "": ["JSON parse error"] });
  });
});

describe("apiFetch", () => {
  afterEach(() => vi.unstubAllGlobals());

  it("sends JSON with the CSRF token and rejects a 400 with its body", async () => {
    const fetchMock = vi.fn(async () =>
      new Response(JSON.stringify({ "scenario.training.global_batch_size": ["must divide"] }), { status: 400 }),
    );
    vi.stubGlobal("fetch", fetchMock);
    vi.stubGlobal("document", { cookie: "csrftoken=tok123", querySelector: () => null });
    const err = await rejection(apiFetch("/api/v1/scenarios/", { body: { name: "x" } }));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(err.fieldErrors).toEqual({ "scenario.training.global_batch_size": ["must divide"] });
    expect(err.message).toBe("scenario.training.global_batch_size: must divide");
    const [url, init] = fetchMock.mock.calls[0] as unknown as [string, RequestInit];
    expect(url).toBe("/api/v1/scenarios/");
    expect(init.method).toBe("POST");
    expect(init.body).toBe('{"name":"x"}');
    expect((init.headers as Record<string, string>)["X-CSRFToken"]).toBe("tok123");
    expect((init.headers as Record<string, string>)["Content-Type"]).toBe("application/json");
  });

  it("does not send the CSRF token on GET and follows pages", async () => {
    const pages: Record<string, unknown> = {
      "/list/": { results: [1, 2], next: "/list/?page=2" },
      "/list/?page=2": { results: [3], next: null },
    };
    const fetchMock = vi.fn(async (url: string) => new Response(JSON.stringify(pages[url])));
    vi.stubGlobal("fetch", fetchMock);
    vi.stubGlobal("document", { cookie: "csrftoken=tok123", querySelector: () => null });
    expect(await getList<number>("/list/")).toEqual([1, 2, 3]);
    const init = (fetchMock.mock.calls[0] as unknown as [string, RequestInit])[1];
    expect((init.headers as Record<string, string>)["X-CSRFToken"]).toBeUndefined();
  });

  it("turns a non-JSON error page into a detail message", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => new Response("<h1>Server Error</h1>", { status: 500 })));
    const err = await rejection(apiFetch("/x/"));
    expect(err.status).toBe(500);
    expect(err.fieldErrors).toEqual({ "": ["<h1>Server Error</h1>"] });
  });
});
