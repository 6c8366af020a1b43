import { describe, expect, it } from "vitest";

import { unwrap } from "./api";

describe("unwrap", () => {
  it("returns the owner's object as it is", () => {
    const body = { id: 3, name: "x", status: "running" };
    expect(unwrap(body)).toEqual({ data: body, shared: null });
  });

  it("takes a share link's data out of its envelope", () => {
    const data = { id: null, name: "x" };
    const body = { kind: "comparison" as const, token: "t", name: "x", owner: "o", created_at: "", data };
    const out = unwrap(body);
    expect(out.data).toBe(data);
    expect(out.shared?.kind).toBe("comparison");
  });
});
