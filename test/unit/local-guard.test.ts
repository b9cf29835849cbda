import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import type { EventService } from "../../shared/events/service.ts";
import { createApp } from "../../shared/http/app.ts";
import { accessNotice } from "../../shared/http/local-guard.ts";
import { silentLogger } from "../../shared/logger.ts";

function localApp(env: Record<string, string> = {}) {
  const events = new Proxy({}, { get: () => undefined }) as EventService;
  return createApp({
    config: loadConfig({ HOURGLASS_MODE: "local", ...env }),
    logger: silentLogger,
    events,
    leases: undefined,
    ledger: undefined,
    signing: undefined,
    health: async () => ({ status: "ok", checks: {} }),
  });
}

const post = (headers: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: "{}",
});

describe("the unauthenticated local API (issue 9)", () => {
  it("refuses a Host that is not loopback or configured (DNS rebinding)", async () => {
    const app = localApp();
    expect((await app.request("http://127.0.0.1:3000/health")).status).toBe(200);
    expect((await app.request("/health", { headers: { host: "localhost:3000" } })).status).toBe(200);
    expect((await app.request("/health", { headers: { host: "[::1]:3000" } })).status).toBe(200);
    expect((await app.request("/health", { headers: { host: "attacker.example:3000" } })).status).toBe(403);
    expect((await app.request("/v1/events", { headers: { host: "attacker.example" } })).status).toBe(403);
    const configured = localApp({ HOURGLASS_ALLOWED_HOSTS: "hourglass.internal" });
    expect(
      (await configured.request("/health", { headers: { host: "hourglass.internal:3000" } })).status,
    ).toBe(200);
  });

  it("refuses a state-changing request with a cross-site Origin", async () => {
    const app = localApp();
    const url = "http://127.0.0.1:3000/v1/leases/x/release";
    expect((await app.request(url, post({ origin: "https://evil.example" }))).status).toBe(403);
    expect((await app.request(url, post({ origin: "null" }))).status).toBe(403);
    // Same-site pages and command-line clients (no Origin) reach the route.
    expect((await app.request(url, post({ origin: "http://127.0.0.1:3000" }))).status).not.toBe(403);
    expect((await app.request(url, post({}))).status).not.toBe(403);
  });

  it("does not apply on AWS, where API Gateway and IAM front the function", async () => {
    const events = new Proxy({}, { get: () => undefined }) as EventService;
    const app = createApp({
      config: loadConfig({ HOURGLASS_MODE: "aws", HOURGLASS_WEBHOOK_SECRET: "x".repeat(32) }),
      logger: silentLogger,
      events,
      leases: undefined,
      ledger: undefined,
      signing: undefined,
      health: async () => ({ status: "ok", checks: {} }),
    });
    const response = await app.request("/health", {
      headers: { host: "abc.execute-api.eu-west-1.amazonaws.com" },
    });
    expect(response.status).toBe(200);
  });
});

describe("the startup notice", () => {
  it("says the local API is unauthenticated and loopback-bound when no tokens are set", () => {
    const open = accessNotice(loadConfig({ HOURGLASS_MODE: "local" }));
    expect(open).toMatch(/UNAUTHENTICATED/);
    expect(open).toMatch(/127\.0\.0\.1/);
    const closed = accessNotice(loadConfig({ HOURGLASS_API_TOKENS: "a:aaaaaaaaaaaaaaaaaaaa" }));
    expect(closed).toMatch(/bearer token/);
  });
});
