import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

interface Received {
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

const rec = recorder();
let hg: TestHourglass;
let runtime: Runtime;
let server: Server;
let base: string;
const received: Received[] = [];
/** When the slow receiver answered, by path. */
const answered: { path: string; at: number }[] = [];

beforeAll(async () => {
  // The receiver answers by path: /ok 200, /fail 500 (retried), /slow after 5 s.
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body, at: Date.now() });
      if (req.url?.startsWith("/fail")) res.writeHead(500).end("no");
      else if (req.url?.startsWith("/slow"))
        setTimeout(() => {
          answered.push({ path: req.url ?? "", at: Date.now() });
          res.writeHead(200).end();
        }, 5_000);
      else res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  hg = await testHourglass(
    {
      HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true",
      HOURGLASS_BACKOFF_BASE_MS: "50",
      HOURGLASS_BACKOFF_MAX_MS: "100",
    },
    { handlers: [rec.handler] },
  );
  runtime = startRuntime(hg, { tickMs: 100 });
});

afterAll(async () => {
  await runtime?.stop();
  await hg?.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const headersOf = (r: Received) =>
  Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)])) as Record<string, string>;

describe("per-event callbacks", () => {
  it("calls onSuccess once with the outcome, signed with the tenant's secret, and onFailure when the event dies", async () => {
    const tenant = freshTenant("cb");
    const ok = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 0.2,
      payload: { failTimes: 1 },
      callbacks: { onSuccess: `${base}/ok/${tenant}`, onFailure: `${base}/never/${tenant}` },
    });
    const dead = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 0.2,
      payload: { fatal: true },
      callbacks: { onSuccess: `${base}/never/${tenant}`, onFailure: `${base}/ok/${tenant}/dead` },
    });
    await eventually(async () =>
      received.filter((r) => r.path.includes(tenant)).length >= 2 ? true : undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000)); // room for a duplicate
    const mine = received.filter((r) => r.path.includes(tenant));
    expect(mine.map((r) => r.path).sort()).toEqual([`/ok/${tenant}`, `/ok/${tenant}/dead`]);
    const secrets = await hg.signing.signingSecretsFor(tenant);
    const verifier = new Webhook(secrets.current);
    const success = mine.find((r) => r.path === `/ok/${tenant}`)!;
    expect(verifier.verify(success.body, headersOf(success))).toMatchObject({
      kind: "hourglass.callback",
      outcome: "succeeded",
      event: { id: ok.event.id, type: "test.record", attempt: 2 },
    });
    const failure = mine.find((r) => r.path.endsWith("/dead"))!;
    const failed = verifier.verify(failure.body, headersOf(failure)) as {
      outcome: string;
      event: { error: string };
    };
    expect(failed.outcome).toBe("dead");
    expect(failed.event.error).toContain("told to fail for good");
    // Another tenant's secret does not verify it.
    const other = await hg.signing.signingSecretsFor(freshTenant("cbother"));
    expect(() => new Webhook(other.current).verify(success.body, headersOf(success))).toThrow();
    expect((await hg.events.get(tenant, dead.event.id)).status).toBe("dead");
  }, 30_000);

  it("never delays or fails the event: a failing receiver is retried on its own, a slow one is waited for on its own", async () => {
    const tenant = freshTenant("cbslow");
    const failing = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 0.2,
      payload: {},
      callbacks: { onSuccess: `${base}/fail/${tenant}` },
    });
    const slow = await hg.events.schedule(tenant, {
      type: "test.record",
      delaySeconds: 0.2,
      payload: {},
      callbacks: { onSuccess: `${base}/slow/${tenant}` },
    });
    const succeededAt: number[] = [];
    for (const { event } of [failing, slow]) {
      const done = await eventually(async () => {
        const view = await hg.events.get(tenant, event.id);
        return view.status === "succeeded" ? view : undefined;
      });
      expect(done.attempts).toBe(1);
      succeededAt.push(done.updatedAt);
    }
    // Both succeeded before the slow receiver answered (it answers 5 s after it is called), by
    // the success writes' own times, however long this machine took to get there.
    const slowAnswer = await eventually(
      async () => answered.find((a) => a.path === `/slow/${tenant}`),
      15_000,
      "the slow receiver to answer",
    );
    for (const at of succeededAt) expect(at).toBeLessThan(slowAnswer.at);
    // The failing receiver is called again (the callback's own retries), the event stays succeeded.
    await eventually(async () =>
      received.filter((r) => r.path === `/fail/${tenant}`).length >= 2 ? true : undefined,
    );
    expect((await hg.events.get(tenant, failing.event.id)).status).toBe("succeeded");
  }, 60_000);

  it("refuses a callback that is not an http(s) URL, naming the field", async () => {
    await expect(
      hg.events.schedule("cbbad", {
        type: "test.record",
        delaySeconds: 10,
        payload: {},
        callbacks: { onSuccess: "ftp://example.com/x" },
      }),
    ).rejects.toMatchObject({ issues: [expect.objectContaining({ path: "callbacks.onSuccess" })] });
  });
});
