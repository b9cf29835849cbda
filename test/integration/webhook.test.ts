import { createHmac } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ForbiddenAddressError, NonRetryableError } from "../../shared/handlers/errors.ts";
import type { HandlerContext } from "../../shared/handlers/registry.ts";
import { webhookHandler, webhookPayload } from "../../shared/handlers/webhook.ts";
import { silentLogger } from "../../shared/logger.ts";

const secret = "a-test-secret-of-enough-length";
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

const context = (signal = new AbortController().signal): HandlerContext => ({
  id: "evt-1",
  tenant: "t",
  attempt: 2,
  runAt: new Date(),
  logger: silentLogger,
  signal,
});

const run = (payload: unknown, options = { allowPrivate: true, timeoutMs: 2_000 }) => {
  const handler = webhookHandler({ secret, ...options });
  return handler.run(webhookPayload.parse(payload), context());
};

describe("the webhook handler", () => {
  it("sends the body with the event id, attempt and a verifiable signature", async () => {
    reply = { status: 204 };
    received.length = 0;
    await run({ url: `${base}/hook`, body: { orderId: 42 }, headers: { "x-custom": "yes" } });
    const [request] = received;
    expect(request!.method).toBe("POST");
    expect(request!.body).toBe('{"orderId":42}');
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["x-custom"]).toBe("yes");
    expect(request!.headers["hourglass-event-id"]).toBe("evt-1");
    expect(request!.headers["hourglass-attempt"]).toBe("2");
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(request!.headers["hourglass-signature"]))!;
    const expected = createHmac("sha256", secret).update(`${t}.${request!.body}`).digest("hex");
    expect(v1).toBe(expected);
    expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(5);
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

  it("refuses the metadata endpoint even when private targets are allowed", async () => {
    const error = await run({ url: "http://169.254.169.254/latest/meta-data/" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ForbiddenAddressError);
  });
});
