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

/**
 * The same count for the other paths docs/cost.md prices: batch submission (TransactWriteItems,
 * 100 items a transaction), a job that fails once and is retried, and a job cancelled before it
 * is dispatched. Each writes `.hourglass/requests-per-job-<path>.json`.
 */
const measure = async (path: string, jobs: number, work: () => Promise<void>) => {
  for (const key of Object.keys(counts)) delete counts[key];
  await work();
  const perJob = Object.fromEntries(
    Object.keys(counts)
      .sort()
      .map((k) => [k, Number(((counts[k] ?? 0) / jobs).toFixed(3))]),
  );
  writeFileSync(
    `.hourglass/requests-per-job-${path}.json`,
    `${JSON.stringify({ path, jobs, perJob }, null, 2)}\n`,
  );
  console.log(path, JSON.stringify(perJob));
  return (key: string) => perJob[key] ?? 0;
};

it("counts the AWS requests of one job on the batch, retry and cancel paths", async () => {
  const jobs = 200;
  const runtime = startRuntime(hg, { tickMs: 1_000 });
  try {
    const before = rec.runs.length;
    const batch = await measure("batch", jobs, async () => {
      const results = await hg.events.scheduleBatch(
        "acme",
        Array.from({ length: jobs }, (_, i) => ({
          type: "test.record",
          payload: { label: `b-${i}` },
          delaySeconds: 7,
        })),
      );
      expect(results.every((r) => r.ok)).toBe(true);
      await eventually(
        async () => (rec.runs.length >= before + jobs ? true : undefined),
        60_000,
        "the batch to run",
      );
      await new Promise((done) => setTimeout(done, 1_500));
    });
    expect(
      batch("dynamodb:TransactWriteCommand") + batch("dynamodb:TransactWriteItemsCommand"),
    ).toBeLessThanOrEqual(0.02);
    expect(batch("dynamodb:PutCommand") + batch("dynamodb:PutItemCommand")).toBe(0);

    const retryStart = rec.runs.length;
    const retry = await measure("retry", jobs, async () => {
      for (let i = 0; i < jobs; i++)
        await hg.events.schedule("acme", { type: "test.record", payload: { failTimes: 1 }, delaySeconds: 7 });
      // Two runs per job: the failure and the retry.
      await eventually(
        async () => (rec.runs.length >= retryStart + 2 * jobs ? true : undefined),
        90_000,
        "every job to fail once and succeed",
      );
      await new Promise((done) => setTimeout(done, 1_500));
    });
    // The retry record and the success record.
    expect(retry("dynamodb:UpdateCommand") + retry("dynamodb:UpdateItemCommand")).toBeGreaterThanOrEqual(2);

    const cancel = await measure("cancel", jobs, async () => {
      for (let i = 0; i < jobs; i++) {
        const { event } = await hg.events.schedule("acme", {
          type: "test.record",
          payload: {},
          delaySeconds: 3_600,
        });
        await hg.events.cancel("acme", event.id);
      }
    });
    expect(cancel("dynamodb:PutCommand") + cancel("dynamodb:PutItemCommand")).toBeCloseTo(1, 5);
    expect(cancel("sqs:SendMessageBatchCommand")).toBe(0);
  } finally {
    await runtime.stop();
  }
}, 240_000);
