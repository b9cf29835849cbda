import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { afterAll, beforeAll } from "vitest";
import type { Hourglass } from "../../shared/hourglass.ts";
import { apiDeps, createApp } from "../../shared/http/app.ts";
import { type TestHourglass, testHourglass } from "./harness.ts";

/** The real HTTP app on a loopback port, as `npm start` serves it. */
export async function serveApi(hourglass: Hourglass) {
  const app = createApp(apiDeps(hourglass));
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;
  return {
    base,
    async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await response.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON bodies by path.
      return { status: response.status, type: response.headers.get("content-type") ?? "", json: json as any };
    },
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

export type ApiServer = Awaited<ReturnType<typeof serveApi>>;

/**
 * An Hourglass on the local stack and its HTTP server, for one test file: started before its
 * tests, closed and torn down after them. Read `served.hg` and `served.api` inside tests.
 */
export function useApiServer(...args: Parameters<typeof testHourglass>) {
  const served = {} as { hg: TestHourglass; api: ApiServer };
  beforeAll(async () => {
    served.hg = await testHourglass(...args);
    served.api = await serveApi(served.hg);
  });
  afterAll(async () => {
    await served.api?.close();
    await served.hg?.destroy();
  });
  return served;
}
