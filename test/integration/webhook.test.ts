import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AddressPolicy } from "../../shared/handlers/address-guard.ts";
import {
  ForbiddenAddressError,
  NonRetryableError,
  WebhookRequestError,
} from "../../shared/handlers/errors.ts";
import type { HandlerContext } from "../../shared/handlers/registry.ts";
import {
  deriveTenantSecret,
  type SigningState,
  type SigningStateStore,
  WebhookSigning,
} from "../../shared/handlers/signing.ts";
import { webhookHandler, webhookPayload } from "../../shared/handlers/webhook.ts";
import { silentLogger } from "../../shared/logger.ts";

const master = "a-test-master-secret-of-enough-length";

/** Rotation state in memory: the DynamoDB store is exercised by the API test. */
class MemoryStore implements SigningStateStore {
  readonly states = new Map<string, SigningState>();
  async get(tenant: string) {
    return this.states.get(tenant) ?? { generation: 0 };
  }
  async rotate(tenant: string, previousUntil: number, now: number) {
    const next = { generation: (await this.get(tenant)).generation + 1, rotatedAt: now, previousUntil };
    this.states.set(tenant, next);
    return next;
  }
}
const store = new MemoryStore();
const signing = new WebhookSigning(master, store, Date.now, 0);
const policy = (allowPrivate: boolean): AddressPolicy => ({
  allowPrivate,
  allowLoopback: allowPrivate,
  refusedPorts: new Set(),
});
let server: Server;
let base: string;
let reply: { status: number; delayMs?: number } = { status: 200 };
const received: { method: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received.push({ method: req.method!, headers: req.headers, body });
      setTimeout(() => res.writeHead(reply.status).end("nope"), reply.delayMs ?? 0);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const context = (tenant = "t", signal = new AbortController().signal): HandlerContext => ({
  id: "evt-1",
  tenant,
  attempt: 2,
  runAt: new Date(),
  logger: silentLogger,
  signal,
  remainingMs: () => 60_000,
});

const run = (payload: unknown, options = { allowPrivate: true, timeoutMs: 2_000 }, tenant = "t") => {
  const handler = webhookHandler({
    signing,
    policy: policy(options.allowPrivate),
    timeoutMs: options.timeoutMs,
  });
  return handler.run(webhookPayload.parse(payload), context(tenant));
};

const headersOf = (request: { headers: IncomingHttpHeaders }) =>
  Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]));

describe("the webhook handler", () => {
  it("sends the body, signed on the Standard Webhooks spec with the tenant's own secret", async () => {
    reply = { status: 204 };
    received.length = 0;
    await run({ url: `${base}/hook`, body: { orderId: 42 }, headers: { "x-custom": "yes" } });
    const [request] = received;
    expect(request!.method).toBe("POST");
    expect(request!.body).toBe('{"orderId":42}');
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["x-custom"]).toBe("yes");
    // Information only, beside the signed webhook-id.
    expect(request!.headers["hourglass-event-id"]).toBe("evt-1");
    expect(request!.headers["hourglass-attempt"]).toBe("2");
    expect(request!.headers["webhook-id"]).toBe("evt-1");
    expect(request!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    // A receiver verifies with the standardwebhooks package and the tenant's secret.
    const mine = new Webhook(deriveTenantSecret(master, "t", 0));
    expect(mine.verify(request!.body, headersOf(request!))).toEqual({ orderId: 42 });
    // Another tenant's secret does not verify it: tenant A cannot sign for tenant B's receiver.
    const theirs = new Webhook(deriveTenantSecret(master, "other", 0));
    expect(() => theirs.verify(request!.body, headersOf(request!))).toThrow();
    // Id, timestamp and body are all signed: a changed id or body fails.
    expect(() => mine.verify(request!.body, { ...headersOf(request!), "webhook-id": "evt-2" })).toThrow();
    expect(() => mine.verify('{"orderId":43}', headersOf(request!))).toThrow();
  });

  it("keeps webhook-id stable across attempts and lets no payload header forge a signed one", async () => {
    reply = { status: 204 };
    received.length = 0;
    await run({
      url: `${base}/hook`,
      body: "x",
      headers: { "Webhook-Id": "forged", "webhook-signature": "v1,forged", "Hourglass-Event-Id": "forged" },
    });
    const [request] = received;
    expect(request!.headers["webhook-id"]).toBe("evt-1");
    expect(request!.headers["hourglass-event-id"]).toBe("evt-1");
    expect(request!.headers["webhook-signature"]).not.toContain("forged");
  });

  it("signs with both secrets during a rotation's overlap, and each verifies", async () => {
    reply = { status: 204 };
    received.length = 0;
    const tenant = "rotating";
    await signing.rotate(tenant, 60_000);
    await run({ url: `${base}/hook`, body: { n: 1 } }, undefined, tenant);
    const [request] = received;
    const signatures = String(request!.headers["webhook-signature"]).split(" ");
    expect(signatures).toHaveLength(2);
    for (const generation of [0, 1]) {
      const receiver = new Webhook(deriveTenantSecret(master, tenant, generation));
      expect(receiver.verify(request!.body, headersOf(request!))).toEqual({ n: 1 });
    }
    // After the overlap only the new secret signs.
    store.states.set(tenant, { generation: 1, rotatedAt: 0, previousUntil: Date.now() - 1 });
    received.length = 0;
    await run({ url: `${base}/hook`, body: { n: 2 } }, undefined, tenant);
    expect(String(received[0]!.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    expect(() =>
      new Webhook(deriveTenantSecret(master, tenant, 0)).verify(received[0]!.body, headersOf(received[0]!)),
    ).toThrow();
  });

  it("retries a 429 or 5xx, and dead-letters any other 4xx", async () => {
    reply = { status: 503 };
    const retryable = await run({ url: `${base}/hook` }).catch((e: unknown) => e);
    expect(retryable).toBeInstanceOf(Error);
    expect(retryable).not.toBeInstanceOf(NonRetryableError);
    reply = { status: 429 };
    expect(await run({ url: `${base}/hook` }).catch((e: unknown) => e)).not.toBeInstanceOf(NonRetryableError);
    reply = { status: 404 };
    expect(await run({ url: `${base}/hook` }).catch((e: unknown) => e)).toBeInstanceOf(NonRetryableError);
  });

  it("times out a slow receiver as a retryable failure", async () => {
    reply = { status: 200, delayMs: 1_000 };
    const error = await run({ url: `${base}/slow` }, { allowPrivate: true, timeoutMs: 200 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(NonRetryableError);
  });

  it("times out a slow receiver even when memory is collected while it waits (a 200 after the timeout is not a success)", async () => {
    // On Node 20, AbortSignal.any holds its sources weakly: with a collection during the request,
    // a timeout made by AbortSignal.timeout never fired and the late 200 counted as delivered.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    reply = { status: 200, delayMs: 1_500 };
    const collecting = setInterval(gc, 20);
    const started = Date.now();
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 5 }, () =>
          run({ url: `${base}/slow-gc` }, { allowPrivate: true, timeoutMs: 200 }).then(
            () => "delivered",
            (e: unknown) => (e instanceof WebhookRequestError ? e.code : String(e)),
          ),
        ),
      );
      expect(outcomes).toEqual(Array(5).fill("timed out"));
      expect(Date.now() - started).toBeLessThan(1_400);
    } finally {
      clearInterval(collecting);
    }
  });

  it("refuses loopback, by name or by literal address, when private targets are not allowed", async () => {
    const port = new URL(base).port;
    received.length = 0;
    for (const host of ["127.0.0.1", "localhost", "[::1]"]) {
      const error = await run(
        { url: `http://${host}:${port}/hook` },
        { allowPrivate: false, timeoutMs: 1_000 },
      ).catch((e: unknown) => e);
      expect(error, host).toBeInstanceOf(ForbiddenAddressError);
    }
    expect(received).toHaveLength(0);
  });

  it("never names the address a refused host resolved to", async () => {
    const port = new URL(base).port;
    const error = await run(
      { url: `http://localhost:${port}/hook` },
      { allowPrivate: false, timeoutMs: 1_000 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenAddressError);
    expect((error as Error).message).toContain("localhost");
    expect((error as Error).message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it("keeps the resolved address out of a failed connection's error", async () => {
    const closed = createServer();
    await new Promise<void>((done) => closed.listen(0, "127.0.0.1", done));
    const { port } = closed.address() as { port: number };
    await new Promise((done) => closed.close(done));
    const error = await run({ url: `http://localhost:${port}/hook` }).catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(NonRetryableError);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    expect((error as Error).message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it("dead-letters at once a request Node cannot build, as stored before headers were validated", async () => {
    // Events and schedules accepted before webhookPayload checked headers still hold such payloads;
    // each attempt would fail the same way, so retrying them only delays the dead letter.
    const handler = webhookHandler({ signing, policy: policy(true), timeoutMs: 2_000 });
    received.length = 0;
    const unsendable: Record<string, string>[] = [{ "bad header": "x" }, { "x-a": "line\r\nInjected: 1" }];
    for (const headers of unsendable) {
      const error = await handler
        .run({ url: `${base}/hook`, method: "POST", headers }, context())
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(NonRetryableError);
      expect((error as Error).message).toMatch(/ERR_INVALID/);
    }
    expect(received).toHaveLength(0);
  });

  it("refuses the metadata endpoint even when private targets are allowed", async () => {
    const error = await run({ url: "http://169.254.169.254/latest/meta-data/" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenAddressError);
  });
});
