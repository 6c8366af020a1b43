import { describe, expect, it } from "vitest";

import { escapeHtml } from "./html";

describe("escapeHtml", () => {
  it("escapes markup characters as numeric references", () => {
    // & = 38, < = 60, > = 62, " = 34, ' = 39
    expect(escapeHtml(`<a href="x">T&'s</a>`)).toBe("&#60;a href=&#34;x&#34;&#62;T&#38;&#39;s&#60;/a&#62;");
    expect(escapeHtml("plain 85.1 GB")).toBe("plain 85.1 GB");
  });
});
