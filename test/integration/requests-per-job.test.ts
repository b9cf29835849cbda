import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * How many AWS requests one job costs, counted on the real clients through a whole life
 * (schedule → dispatch → queue → run → success). docs/cost.md is built on these counts.
 */
const rec = recorder();
let hg: TestHourglass;
const counts: Record<string, number> = {};
let eventUpdates = 0;

const count =
  (service: string) =>
  (next: (args: unknown) => Promise<unknown>, context: { commandName?: string }) =>
  async (args: unknown) => {
    const key = `${service}:${context.commandName ?? "?"}`;
    counts[key] = (counts[key] ?? 0) + 1;
    // The dispatcher's group leases add updates per tick, not per job (more under a loaded
    // machine's slower run): the event's own updates are counted apart.
    const table = (args as { input?: { TableName?: string } }).input?.TableName;
    if (table !== undefined && table === hg.config.tables.events && key.startsWith("dynamodb:Update"))
      eventUpdates++;
    return next(args);
  };

beforeAll(async () => {
  hg = await testHourglass({ HOURGLASS_RECOVERY_EVERY_SECONDS: "60" }, { handlers: [rec.handler] });
  for (const [service, client] of [
    ["dynamodb", hg.dynamo],
    ["dynamodb", hg.dynamoReads],
    ["sqs", hg.sqs],
  ] as const) {
    (client.middlewareStack as unknown as { add(m: unknown, o: unknown): void }).add(count(service), {
      step: "initialize",
      name: `count-${service}-${Math.random()}`,
    });
  }
});

afterAll(async () => {
  await hg.destroy();
});

it("counts the AWS requests of one job", async () => {
  const jobs = 300;
  const tenant = freshTenant("cost");
  const runtime = startRuntime(hg, { tickMs: 1_000 });
  const started = Date.now();
  try {
    // One at a time, as API calls arrive; due beyond the look-ahead, so the dispatcher sends them.
    for (let i = 0; i < jobs; i++)
      await hg.events.schedule(tenant, {
        type: "test.record",
        payload: { label: `job-${i}` },
        delaySeconds: 7,
      });
    await eventually(
      async () => (new Set(rec.runs.map((r) => r.id)).size >= jobs ? true : undefined),
      60_000,
      "every job to run",
    );
    // Let the last acks and journal writes land.
    await new Promise((done) => setTimeout(done, 1_500));
  } finally {
    await runtime.stop();
  }
  const minutes = (Date.now() - started) / 60_000;
  const perJob = (key: string) => (counts[key] ?? 0) / jobs;
  const report = {
    jobs,
    minutes: Number(minutes.toFixed(2)),
    perJob: Object.fromEntries(
      Object.keys(counts)
        .sort()
        .map((k) => [k, Number(perJob(k).toFixed(3))]),
    ),
    raw: counts,
  };
  // For reading after a run (docs/benchmarks.md quotes it); not printed, so a passing run reads clean.
  writeFileSync(".hourglass/requests-per-job.json", `${JSON.stringify(report, null, 2)}\n`);

  // The event's own durable writes: one conditional put, one conditional update at success.
  expect(perJob("dynamodb:PutCommand") + perJob("dynamodb:PutItemCommand")).toBeCloseTo(1, 5);
  expect(eventUpdates / jobs).toBeGreaterThanOrEqual(1);
  expect(eventUpdates / jobs).toBeLessThan(1.3);
  // Sends go out ten to a request at most, and payload reads are batched.
  expect(perJob("sqs:SendMessageBatchCommand")).toBeGreaterThan(0);
  expect(perJob("sqs:SendMessageBatchCommand")).toBeLessThanOrEqual(0.3);
  const reads = perJob("dynamodb:BatchGetCommand") + perJob("dynamodb:BatchGetItemCommand");
  expect(reads).toBeGreaterThan(0);
  expect(reads).toBeLessThanOrEqual(0.5);
  // Every success write and every payload read happened: each job ran, and exactly once (a
  // duplicate run would pass a check of distinct ids, so the count of runs is checked too).
  expect(new Set(rec.runs.map((r) => r.id)).size).toBe(jobs);
  expect(rec.runs).toHaveLength(jobs);
}, 120_000);
