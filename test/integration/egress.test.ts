import { createServer, type Server } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { EGRESS_VARIABLE, NoInternetEgressError } from "../../shared/handlers/egress.ts";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import type { HandlerContext } from "../../shared/handlers/registry.ts";
import { deriveTenantSecret } from "../../shared/handlers/signing.ts";
import { webhookHandler, webhookPayload } from "../../shared/handlers/webhook.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { silentLogger } from "../../shared/logger.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * A deployment without internet egress (the construct sets HOURGLASS_INTERNET_EGRESS=false) must
 * say so at once, not let every webhook hang until its timeout and dead-letter five attempts later.
 */
let server: Server;
let base: string;
let hits = 0;

beforeAll(async () => {
  server = createServer((_req, res) => {
    hits++;
    res.writeHead(204).end();
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

afterEach(() => {
  delete process.env[EGRESS_VARIABLE];
});

const context: HandlerContext = {
  id: "evt-1",
  tenant: "t",
  attempt: 1,
  runAt: new Date(),
  logger: silentLogger,
  signal: new AbortController().signal,
  remainingMs: () => 60_000,
};

const signing = {
  signingSecretsFor: async () => ({
    current: deriveTenantSecret("a-test-secret-of-enough-length", "t", 0),
    generation: 0,
  }),
};

const run = (url: string, allowPrivate: boolean) =>
  webhookHandler({
    signing,
    policy: { allowPrivate, allowLoopback: allowPrivate, refusedPorts: new Set() },
    timeoutMs: 10_000,
  }).run(webhookPayload.parse({ url }), context);

describe("a webhook in a deployment without internet egress", () => {
  it("fails at once, as a final error, without opening a connection", async () => {
    process.env[EGRESS_VARIABLE] = "false";
    // 192.0.2.1 (TEST-NET-1) never answers: without the check this would wait for the timeout.
    const error = await run("http://192.0.2.1/hook", false).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoInternetEgressError);
    expect(error).toBeInstanceOf(NonRetryableError);
    expect((error as Error).message).toMatch(/^this deployment has no internet egress/);
  });

  it("still reaches a private target when private targets are allowed, and refuses a public one", async () => {
    process.env[EGRESS_VARIABLE] = "false";
    hits = 0;
    await run(`${base}/hook`, true);
    expect(hits).toBe(1);
    await expect(run("http://192.0.2.1/hook", true)).rejects.toBeInstanceOf(NoInternetEgressError);
  });

  it("changes nothing when the deployment has egress", async () => {
    process.env[EGRESS_VARIABLE] = "true";
    hits = 0;
    await run(`${base}/hook`, true);
    expect(hits).toBe(1);
  });
});

describe("through the worker", () => {
  let hg: TestHourglass;
  let runtime: Runtime;

  beforeAll(async () => {
    hg = await testHourglass({ HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "false", HOURGLASS_MAX_ATTEMPTS: "5" });
    runtime = startRuntime(hg, { tickMs: 100 });
  });

  afterAll(async () => {
    await runtime.stop();
    await hg.destroy();
  });

  it("dead-letters the event on its first attempt, with lastError saying why", async () => {
    process.env[EGRESS_VARIABLE] = "false";
    const { event } = await hg.events.schedule("acme", {
      type: "webhook",
      delaySeconds: 1,
      payload: { url: "https://hooks.example.com/order-shipped" },
    });
    const dead = await eventually(
      async () => {
        const view = await hg.events.get("acme", event.id);
        return view.status === "dead" ? view : undefined;
      },
      20_000,
      "the event to be dead",
    );
    expect(dead.attempts).toBe(1);
    expect(dead.lastError).toMatch(/this deployment has no internet egress/);
  });
});
