import { describe, expect, it } from "vitest";
import { useApiServer } from "../support/server.ts";

const served = useApiServer();

/** Where a newcomer looks first: the root and `/docs/` lead to the API reference. */
describe("the API reference", () => {
  it.each([
    ["/", 302],
    ["/docs/", 301],
  ])("%s redirects to /docs", async (path, status) => {
    const response = await fetch(`${served.api.base}${path}`, { redirect: "manual" });
    expect(response.status).toBe(status);
    const target = new URL(response.headers.get("location")!, `${served.api.base}${path}`);
    expect(target.pathname).toBe("/docs");
    const page = await fetch(target);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Hourglass API reference");
  });
});
