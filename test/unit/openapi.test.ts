import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderOpenApi } from "../../scripts/openapi.ts";

describe("docs/openapi.json", () => {
  it("is what the code describes (run `npm run openapi` after changing a route or schema)", () => {
    expect(readFileSync("docs/openapi.json", "utf8")).toBe(renderOpenApi());
  });
});
