import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import type { EventService } from "../../shared/events/service.ts";
import { createApp } from "../../shared/http/app.ts";
import type { HealthReport } from "../../shared/http/health.ts";
import { silentLogger } from "../../shared/logger.ts";

const TOKEN = "acme-token-0123456789";
const down: HealthReport = {
  status: "degraded",
  checks: {
    redis: { ok: false, latencyMs: 3, error: "connect ECONNREFUSED 10.0.3.17:6380" },
    dynamodb: { ok: true, latencyMs: 5 },
  },
};

function appWith(env: Record<string, string>, report: HealthReport) {
  const config = loadConfig({ HOURGLASS_MODE: "local", ...env });
  const events = new Proxy({}, { get: () => undefined }) as EventService;
  return createApp({
    config,
    logger: silentLogger,
    events,
    leases: undefined,
    ledger: undefined,
    signing: undefined,
    health: async () => report,
  });
}

describe("/health (issue 9)", () => {
  it("says only up or down to a caller without credentials", async () => {
    const app = appWith({ HOURGLASS_API_TOKENS: `acme:${TOKEN}` }, down);
    const response = await app.request("/health");
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ status: "degraded" });
  });

  it("gives an authenticated caller each check, but never a dependency's raw error or address", async () => {
    const app = appWith({ HOURGLASS_API_TOKENS: `acme:${TOKEN}` }, down);
    const response = await app.request("/health", { headers: { authorization: `Bearer ${TOKEN}` } });
    const text = await response.text();
    expect(response.status).toBe(503);
    expect(JSON.parse(text).checks.redis.ok).toBe(false);
    expect(text).not.toContain("10.0.3.17");
    expect(text).not.toContain("ECONNREFUSED");
  });

  it("keeps raw errors out of the open local API too", async () => {
    const text = await (await appWith({}, down).request("/health")).text();
    expect(text).not.toContain("10.0.3.17");
  });
});
