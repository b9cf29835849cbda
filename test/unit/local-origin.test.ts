import { describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import type { EventService } from "../../shared/events/service.ts";
import { createApp } from "../../shared/http/app.ts";
import { silentLogger } from "../../shared/logger.ts";

function localApp(env: Record<string, string> = {}) {
  const events = new Proxy({}, { get: () => undefined }) as EventService;
  return createApp({
    config: loadConfig({
      HOURGLASS_MODE: "local",
      HOURGLASS_WEBHOOK_SECRET: "a-test-secret-of-enough-length",
      ...env,
    }),
    logger: silentLogger,
    events,
    leases: undefined,
    ledger: undefined,
    signing: undefined,
    health: async () => ({ status: "ok", checks: {} }),
  });
}

const release = (app: ReturnType<typeof localApp>, host: string, origin: string) =>
  app.request(`http://${host}/v1/leases/x/release`, {
    method: "POST",
    headers: { host, origin, "content-type": "application/json" },
    body: "{}",
  });

describe("the local Origin check counts the port (issue 33, finding 13)", () => {
  it("refuses a state-changing request from another port on loopback", async () => {
    const app = localApp();
    // Another program's page (a dev server) on the same machine is another origin.
    expect((await release(app, "127.0.0.1:3000", "http://127.0.0.1:5173")).status).toBe(403);
    expect((await release(app, "127.0.0.1:3000", "http://localhost:5173")).status).toBe(403);
    expect((await release(app, "127.0.0.1:3000", "http://127.0.0.1")).status).toBe(403);
    expect((await release(app, "localhost:3000", "http://localhost:3001")).status).toBe(403);
    // Another loopback name on the same port is another origin too (it may be another socket: ::1).
    expect((await release(app, "127.0.0.1:3000", "http://localhost:3000")).status).toBe(403);
    // Not http(s): never this server's page.
    expect((await release(app, "127.0.0.1:3000", "file://127.0.0.1:3000")).status).toBe(403);
  });

  it("lets the server's own page through, default ports written or not", async () => {
    const app = localApp({ HOURGLASS_ALLOWED_HOSTS: "hourglass.internal" });
    const passes = async (host: string, origin: string) =>
      expect((await release(app, host, origin)).status).not.toBe(403);
    await passes("127.0.0.1:3000", "http://127.0.0.1:3000");
    await passes("localhost:3000", "http://LOCALHOST:3000");
    await passes("[::1]:3000", "http://[::1]:3000");
    await passes("hourglass.internal", "https://hourglass.internal");
    await passes("hourglass.internal:443", "https://hourglass.internal");
    await passes("hourglass.internal:80", "http://hourglass.internal");
  });
});
