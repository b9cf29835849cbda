import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { networkInterfaces } from "node:os";

export interface Delivery {
  /** The path the webhook was sent to: tests name each event's path after what it checks. */
  readonly path: string;
  readonly eventId: string;
  readonly attempt: number;
  /** When the request arrived, epoch ms. */
  readonly at: number;
  readonly status: number;
}

export interface ReceiverBehaviour {
  /** Answer 500 to the first `failTimes` requests on this path. */
  readonly failTimes?: number;
  /** Hold each request this long before answering. */
  readonly delayMs?: number;
  /** Answer with this status (after any `failTimes`). @default 200 */
  readonly status?: number;
  /** Hold each request until this settles (a test's own moment, not a guess at a duration). */
  readonly hold?: Promise<void>;
}

/**
 * This machine's first non-internal IPv4 address: where a receiver stands in for a host in the VPC.
 * Deployed workers refuse loopback targets always (it is the worker's own host), private ones only
 * without `webhookAllowPrivate`.
 */
export function privateAddress(): string {
  for (const addresses of Object.values(networkInterfaces()))
    for (const address of addresses ?? [])
      if (address.family === "IPv4" && !address.internal) return address.address;
  throw new Error("no non-loopback IPv4 address on this machine for a webhook receiver");
}

/**
 * A webhook receiver on `host` (loopback by default) that records every request and answers as each path is told to:
 * 200 (or `status`) by default, 500 for the first `failTimes`, after `delayMs`.
 */
export async function startWebhookReceiver(host = "127.0.0.1") {
  const deliveries: Delivery[] = [];
  const behaviours = new Map<string, ReceiverBehaviour>();
  const arrivals = new Map<string, (() => void)[]>();
  const server: Server = createServer((request: IncomingMessage, response) => {
    const at = Date.now();
    const path = (request.url ?? "/").split("?")[0]!;
    request.resume();
    request.on("end", async () => {
      const behaviour = behaviours.get(path) ?? {};
      const earlier = deliveries.filter((d) => d.path === path).length;
      const status = earlier < (behaviour.failTimes ?? 0) ? 500 : (behaviour.status ?? 200);
      for (const notify of arrivals.get(path) ?? []) notify();
      arrivals.delete(path);
      if (behaviour.delayMs) await new Promise((done) => setTimeout(done, behaviour.delayMs));
      if (behaviour.hold) await behaviour.hold;
      deliveries.push({
        path,
        eventId: String(request.headers["webhook-id"] ?? ""),
        attempt: Number(request.headers["hourglass-attempt"] ?? 0),
        at,
        status,
      });
      response
        .writeHead(status, { "content-type": "text/plain" })
        .end(status < 300 ? "ok" : "failing on purpose");
    });
  });
  await new Promise<void>((done) => server.listen(0, host, done));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path: string) => `http://${host}:${port}${path}`,
    deliveries,
    of: (path: string) => deliveries.filter((d) => d.path === path),
    behave: (path: string, behaviour: ReceiverBehaviour) => behaviours.set(path, behaviour),
    /** Resolves when the next request on `path` arrives (before it is answered). */
    arrival: (path: string) =>
      new Promise<void>((done) => arrivals.set(path, [...(arrivals.get(path) ?? []), done])),
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

export type WebhookReceiver = Awaited<ReturnType<typeof startWebhookReceiver>>;
