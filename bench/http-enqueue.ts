import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { apiDeps, createApp } from "../shared/http/app.ts";
import { benchHourglass } from "./hourglass.ts";
import { payloadOf } from "./stats.ts";

/**
 * Durable enqueue through the public API: `POST /v1/events/batch` of `chunk` events, one request
 * after another, from a client on loopback to the real HTTP app (as `npm start` serves it) on the
 * full local stack (DynamoDB Local journal, Redis index). Events per second, every one accepted.
 * `warm` events go through the same path first, untimed: DynamoDB Local runs interpreted at first,
 * and its CPU per item falls about 4× over its first 20,000 or so items (docs/benchmarks.md), so
 * without a warm-up a short run measures the JVM's JIT more than the enqueue path.
 */
export async function httpBatchEnqueue(
  redisUrl: string,
  n: number,
  chunk: number,
  warm = Math.min(chunk, 50),
): Promise<number> {
  const { hourglass } = await benchHourglass("full", redisUrl);
  const app = createApp(apiDeps(hourglass));
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/events/batch`;
  const payload = payloadOf(100);
  const post = async (count: number) => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        events: Array.from({ length: count }, () => ({ type: "bench.noop", payload, delaySeconds: 86_400 })),
      }),
    });
    const reply = (await response.json()) as { results?: { status: number }[] };
    const accepted = reply.results?.filter((r) => r.status === 201).length ?? 0;
    if (response.status >= 300 || accepted !== count) {
      throw new Error(`batch answered ${response.status}, ${accepted} of ${count} accepted`);
    }
  };
  try {
    for (let i = 0; i < warm; i += chunk) await post(Math.min(chunk, warm - i)); // connections, JIT
    const started = performance.now();
    for (let i = 0; i < n; i += chunk) await post(Math.min(chunk, n - i));
    return n / ((performance.now() - started) / 1000);
  } finally {
    await new Promise<void>((done) => server.close(() => done()));
    await hourglass.close();
  }
}
