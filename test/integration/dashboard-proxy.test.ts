import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { afterAll, describe, expect, it } from "vitest";
import { sigV4Signer } from "../../shared/client/sigv4.ts";
import { dashboardProxy, type ProxyOptions } from "../../shared/dashboard/proxy.ts";
import { useApiServer } from "../support/server.ts";

const TOKEN = "token-proxy-0123456789";
const served = useApiServer({ HOURGLASS_API_TOKENS: `proxied:${TOKEN}` });
const closers: (() => void)[] = [];
afterAll(() => {
  for (const close of closers) close();
});

/** The proxy as `hourglass dashboard` runs it, on a loopback port. */
async function startProxy(options: Omit<ProxyOptions, "origin">): Promise<string> {
  let app: Hono | undefined;
  const server = serve({ fetch: (r) => app!.fetch(r), port: 0, hostname: "127.0.0.1" });
  await new Promise((resolve) => server.once("listening", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  app = dashboardProxy({ ...options, origin });
  closers.push(() => server.close());
  return origin;
}

describe("hourglass dashboard (the loopback proxy)", () => {
  it("serves the page and forwards its API calls with the user's credentials", async () => {
    const origin = await startProxy({ target: served.api.base, token: TOKEN });
    const page = await fetch(`${origin}/dashboard`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("dashboard/assets/app.js");
    expect((await fetch(`${origin}/dashboard/assets/app.js`)).status).toBe(200);

    const stats = await fetch(`${origin}/v1/stats`);
    expect(stats.status).toBe(200);
    const direct = await served.api.call("GET", "/v1/stats", undefined, { authorization: `Bearer ${TOKEN}` });
    expect(await stats.json()).toEqual(direct.json);
    const created = await fetch(`${origin}/v1/events`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ type: "webhook", delaySeconds: 600, payload: { url: "http://127.0.0.1:9/h" } }),
    });
    expect(created.status).toBe(201);
  });

  it("refuses requests from another site, whose calls it would otherwise sign as the user", async () => {
    const origin = await startProxy({ target: served.api.base, token: TOKEN });
    const forged = await fetch(`${origin}/v1/dead-letters/x/replay`, {
      method: "POST",
      headers: { origin: "https://evil.example" },
    });
    expect(forged.status).toBe(403);
  });

  it("signs forwarded calls with SigV4, stage path kept", async () => {
    const seen: { url?: string; headers?: IncomingHttpHeaders } = {};
    const target = createServer((request, response) => {
      seen.url = request.url;
      seen.headers = request.headers;
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    closers.push(() => target.close());
    const base = `http://127.0.0.1:${(target.address() as AddressInfo).port}/api`;
    const origin = await startProxy({ target: base, sign: sigV4Signer({ region: "eu-west-1" }) });
    expect((await fetch(`${origin}/v1/metrics?window=24h`)).status).toBe(200);
    expect(seen.url).toBe("/api/v1/metrics?window=24h");
    expect(seen.headers?.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=\S+\/eu-west-1\/execute-api\//);
    expect(seen.headers?.["x-amz-date"]).toBeDefined();
  });
});
