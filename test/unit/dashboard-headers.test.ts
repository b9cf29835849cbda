import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import { dashboardProxy } from "../../shared/dashboard/proxy.ts";
import type { EventService } from "../../shared/events/service.ts";
import { createApp } from "../../shared/http/app.ts";
import { silentLogger } from "../../shared/logger.ts";

/** The local API with no services behind it: the dashboard routes need none. */
function localApp() {
  const events = new Proxy({}, { get: () => undefined }) as EventService;
  return createApp({
    config: loadConfig({
      HOURGLASS_MODE: "local",
      HOURGLASS_WEBHOOK_SECRET: "a-test-secret-of-enough-length",
    }),
    logger: silentLogger,
    events,
    leases: undefined,
    ledger: undefined,
    signing: undefined,
    health: async () => ({ status: "ok", checks: {} }),
  });
}

const ORIGIN = "http://127.0.0.1:4999";
const servers = {
  "the local API": () => localApp(),
  "the CLI's dashboard proxy": () => dashboardProxy({ target: "http://127.0.0.1:9", origin: ORIGIN }),
};

describe.each(Object.entries(servers))("/dashboard on %s (issue 33, finding 13)", (_name, make) => {
  const get = (path: string) => make().request(`${ORIGIN}${path}`, { headers: { host: "127.0.0.1:4999" } });

  it("cannot be framed, sniffed or made to load anything from elsewhere", async () => {
    const page = await get("/dashboard");
    expect(page.status).toBe(200);
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(csp).not.toContain("unsafe-eval");
    for (const asset of ["app.js", "app.css"]) {
      const response = await get(`/dashboard/assets/${asset}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it.each(["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"])(
    "answers 404 for the asset name %s, not a 5xx",
    async (name) => {
      expect((await get(`/dashboard/assets/${name}`)).status).toBe(404);
    },
  );
});

describe("/docs on the local API", () => {
  it("cannot be framed (its Try it out sends same-origin requests) or sniffed", async () => {
    const app = localApp();
    for (const path of ["/docs", "/docs/assets/swagger-ui.css"]) {
      const response = await app.request(`${ORIGIN}${path}`, { headers: { host: "127.0.0.1:4999" } });
      expect(response.status, path).toBe(200);
      expect(response.headers.get("x-frame-options"), path).toBe("DENY");
      expect(response.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect(response.headers.get("content-security-policy"), path).toContain("frame-ancestors 'none'");
    }
  });
});
