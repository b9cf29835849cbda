import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../shared/config.ts";
import type { EventService } from "../../shared/events/service.ts";
import { createApp } from "../../shared/http/app.ts";
import { type AdminControl, samePrincipal } from "../../shared/http/routes/admin.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { silentLogger } from "../../shared/logger.ts";
import { decodeMessages } from "../../shared/model/message.ts";
import { runCli } from "../support/cli.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";
import { type ApiServer, serveApi } from "../support/server.ts";

const API_TOKEN = "acme-token-0123456789";
const ADMIN_TOKEN = "admin-token-0123456789";

describe("local pause and resume", () => {
  const rec = recorder();
  const sent: { member: string }[] = [];
  let hg: TestHourglass;
  let api: ApiServer;
  let runtime: Runtime;

  beforeAll(async () => {
    // One shard, so "due order" is one sorted set's order and the claim shows it.
    hg = await testHourglass(
      { HOURGLASS_SHARDS: "1", HOURGLASS_SHARD_GROUPS: "1", HOURGLASS_LOOKAHEAD_SECONDS: "1" },
      { handlers: [rec.handler] },
    );
    // Every message sent to the queue, in the order sent.
    (hg.sqs.middlewareStack as unknown as { add(m: unknown, o: unknown): void }).add(
      (next: (args: { input: unknown }) => Promise<unknown>) => async (args: { input: unknown }) => {
        const input = args.input as { Entries?: { MessageBody?: string }[] };
        for (const entry of input.Entries ?? []) sent.push(...decodeMessages(entry.MessageBody ?? ""));
        return next(args);
      },
      { step: "initialize", name: "record-sends" },
    );
    api = await serveApi(hg);
    runtime = startRuntime(hg, { tickMs: 100 });
  });

  afterAll(async () => {
    await runtime.stop();
    await api.close();
    await hg.destroy();
  });

  it("stops claiming while paused, keeps accepting events, and on resume runs the overdue ones in due order, never early", async () => {
    const paused = await api.call("POST", "/v1/admin/pause");
    expect(paused.status).toBe(200);
    expect(paused.json.paused).toBe(true);
    expect((await hg.dispatcher.tick(200)).paused).toBe(true);

    const base = Date.now() + 1_000;
    // Created in an order other than their due order.
    const offsets = [600, 0, 900, 300];
    const ids: string[] = [];
    for (const offset of offsets) {
      const created = await api.call("POST", "/v1/events", {
        type: "test.record",
        runAt: new Date(base + offset).toISOString(),
        payload: {},
      });
      expect(created.status).toBe(201);
      ids.push(created.json.id);
    }
    // Every one is overdue, and none was claimed or run.
    await new Promise((done) => setTimeout(done, base + 900 + 1_500 - Date.now()));
    for (const id of ids) expect((await hg.events.get("default", id)).status).toBe("scheduled");
    expect(rec.runs).toHaveLength(0);
    expect(sent).toHaveLength(0);
    const status = await api.call("GET", "/v1/admin/status");
    expect(status.json).toMatchObject({ paused: true, indexSize: 4 });
    expect(status.json.oldestOverdueMs).toBeGreaterThan(1_000);

    const resumedAt = Date.now();
    const resumed = await api.call("POST", "/v1/admin/resume");
    expect(resumed.status).toBe(200);
    expect(resumed.json.paused).toBe(false);
    await eventually(async () => (rec.runs.length >= 4 ? true : undefined), 15_000, "all four to run");

    const dueOrder = offsets
      .map((offset, i) => ({ offset, id: ids[i]! }))
      .sort((a, b) => a.offset - b.offset)
      .map((e) => e.id);
    expect(sent.map((m) => m.member.split("/")[1])).toEqual(dueOrder);
    for (const run of rec.runs) {
      expect(run.startedAt).toBeGreaterThanOrEqual(run.runAt);
      expect(run.startedAt).toBeGreaterThanOrEqual(resumedAt);
    }
    for (const id of ids) {
      await eventually(
        async () => ((await hg.events.get("default", id)).status === "succeeded" ? true : undefined),
        30_000,
        "success recorded",
      );
    }
  });
});

describe("the CLI, locally", () => {
  let hg: TestHourglass;
  let api: ApiServer;

  beforeAll(async () => {
    hg = await testHourglass();
    api = await serveApi(hg);
  });

  afterAll(async () => {
    await api.close();
    await hg.destroy();
  });

  it("hourglass pause, status and resume act on the local dispatcher through the admin routes", async () => {
    const paused = await runCli(api.base, "pause");
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(/dispatch paused/);
    const status = await runCli(api.base, "--json", "status");
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ paused: true, indexSize: 0 });
    expect((await hg.dispatcher.tick(100)).paused).toBe(true);
    expect((await runCli(api.base, "resume")).stdout).toMatch(/dispatch resumed/);
    expect((await hg.dispatcher.tick(100)).paused).toBeUndefined();
  }, 120_000); // three CLI processes: slow on a loaded machine
});

describe("who may call the admin routes", () => {
  const control: AdminControl = {
    status: async () => ({ paused: false, indexSize: 0, oldestOverdueMs: 0 }),
    setPaused: async () => {},
  };
  const events = new Proxy({}, { get: () => () => Promise.reject(new Error("no events here")) });
  const appWith = (env: Record<string, string>) =>
    createApp({
      config: loadConfig({}, { HOURGLASS_WEBHOOK_SECRET: "a-test-secret-of-enough-length", ...env }),
      logger: silentLogger,
      events: events as EventService,
      leases: undefined,
      ledger: undefined,
      signing: undefined,
      health: () => Promise.reject(new Error("unused")),
      admin: control,
    });
  const pause = (app: ReturnType<typeof appWith>, token?: string, lambdaEnv?: unknown) =>
    app.fetch(
      new Request("http://localhost/v1/admin/pause", {
        method: "POST",
        headers: token ? { authorization: `Bearer ${token}` } : {},
      }),
      lambdaEnv,
    );

  it("is open locally only when no token of any kind is configured", async () => {
    expect((await pause(appWith({ HOURGLASS_MODE: "local" }))).status).toBe(200);
  });

  it("refuses tenants' tokens, and everyone, when API tokens exist without admin tokens", async () => {
    const app = appWith({ HOURGLASS_MODE: "local", HOURGLASS_API_TOKENS: `acme:${API_TOKEN}` });
    expect((await pause(app, API_TOKEN)).status).toBe(403);
    expect((await pause(app)).status).toBe(401);
  });

  it("admits only an admin token when admin tokens are configured", async () => {
    const app = appWith({
      HOURGLASS_MODE: "local",
      HOURGLASS_API_TOKENS: `acme:${API_TOKEN}`,
      HOURGLASS_ADMIN_TOKENS: ADMIN_TOKEN,
    });
    expect((await pause(app, API_TOKEN)).status).toBe(403);
    expect((await pause(app, "not-a-token-at-all-123")).status).toBe(403);
    expect((await pause(app)).status).toBe(401);
    expect((await pause(app, ADMIN_TOKEN)).status).toBe(200);
    // An admin token names no tenant: it opens no tenant's events.
    const list = await app.fetch(
      new Request("http://localhost/v1/events", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
    );
    expect(list.status).toBe(401);
  });

  it("on AWS, admits only the principals the construct names as admins", async () => {
    const app = appWith({
      HOURGLASS_MODE: "aws",
      HOURGLASS_ADMIN_PRINCIPALS: "arn:aws:iam::111111111111:role/ops/HourglassAdmin",
    });
    const as = (userArn: string) => ({ event: { requestContext: { identity: { userArn } } } });
    expect(
      (await pause(app, undefined, as("arn:aws:sts::111111111111:assumed-role/HourglassAdmin/alice"))).status,
    ).toBe(200);
    expect(
      (await pause(app, undefined, as("arn:aws:sts::111111111111:assumed-role/OrdersService/x"))).status,
    ).toBe(403);
    expect(
      (await pause(app, undefined, as("arn:aws:sts::222222222222:assumed-role/HourglassAdmin/eve"))).status,
    ).toBe(403);
    expect((await pause(app)).status).toBe(403);
    const noAdmins = appWith({ HOURGLASS_MODE: "aws" });
    expect(
      (await pause(noAdmins, undefined, as("arn:aws:sts::111111111111:assumed-role/HourglassAdmin/a")))
        .status,
    ).toBe(403);
  });

  it("matches role sessions to roles, whatever the role's path", () => {
    expect(samePrincipal("arn:aws:iam::1:user/bob", "arn:aws:iam::1:user/bob")).toBe(true);
    expect(samePrincipal("arn:aws:sts::1:assumed-role/Ops/s", "arn:aws:iam::1:role/a/b/Ops")).toBe(true);
    expect(samePrincipal("arn:aws:sts::1:assumed-role/Ops/s", "arn:aws:iam::1:role/Ops2")).toBe(false);
    expect(samePrincipal("arn:aws:sts::1:assumed-role/Ops/s", "arn:aws:iam::1:user/Ops")).toBe(false);
  });
});
