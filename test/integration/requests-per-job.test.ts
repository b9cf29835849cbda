import { writeFileSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import { REQUESTS_PER_JOB } from "../../scripts/cost/measured.ts";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";
import { recorder } from "../support/recorder.ts";

/**
 * How many AWS requests, and how many DynamoDB capacity units, one job costs, counted on the real
 * clients through a whole life (schedule → dispatch → queue → run → success), per path: single,
 * batch, retry, cancel and a recurring schedule's occurrence. Capacity units are DynamoDB Local's
 * own `ReturnConsumedCapacity: "INDEXES"` figures (the table and every index it writes, computed
 * from item sizes as AWS bills them), asked for on every call. The pins are the figures
 * `npm run cost` bills (REQUESTS_PER_JOB, scripts/cost/measured.ts): a change that moves them fails
 * here until the bill moves with it.
 */
const rec = recorder();
let hg: TestHourglass;
const counts: Record<string, number> = {};
/** Capacity units per table ("events", "schedules", …) and kind (`write`, `read`, `query`). */
const units: Record<string, number> = {};
let eventUpdates = 0;
/** Entries of every SendMessageBatch request. */
const sendEntries: number[] = [];
/** The size of every claim of the dispatcher that took events (one shard's, in one tick). */
const claims: number[] = [];

const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;
const tableNames = () => ({
  [hg.config.tables.events]: "events",
  [hg.config.tables.schedules]: "schedules",
  [hg.config.tables.leases]: "leases",
});

interface Capacity {
  TableName?: string;
  CapacityUnits?: number;
}

const count =
  (service: string) =>
  (next: (args: unknown) => Promise<{ output?: unknown }>, context: { commandName?: string }) =>
  async (args: unknown) => {
    const command = context.commandName ?? "?";
    const key = `${service}:${command}`;
    counts[key] = (counts[key] ?? 0) + 1;
    const input = (
      args as { input?: { TableName?: string; ReturnConsumedCapacity?: string; Entries?: unknown[] } }
    ).input;
    if (key === "sqs:SendMessageBatchCommand") sendEntries.push(input?.Entries?.length ?? 0);
    // The dispatcher's group leases add updates per tick, not per job (more under a loaded
    // machine's slower run): the event's own updates are counted apart, once answered, so a
    // wait for them is a wait for their units too.
    const table = input?.TableName;
    const eventUpdate =
      table !== undefined && table === hg.config.tables.events && key.startsWith("dynamodb:Update");
    if (
      service === "dynamodb" &&
      input &&
      !command.startsWith("ListTables") &&
      !/Table|TimeToLive/.test(command)
    )
      input.ReturnConsumedCapacity = "INDEXES";
    const result = await next(args).catch((error: unknown) => {
      if (eventUpdate) eventUpdates++;
      throw error;
    });
    const consumed = (result.output as { ConsumedCapacity?: Capacity | Capacity[] } | undefined)
      ?.ConsumedCapacity;
    const kind = WRITES.test(command) ? "write" : command.startsWith("Query") ? "query" : "read";
    for (const c of consumed === undefined ? [] : Array.isArray(consumed) ? consumed : [consumed]) {
      const name = tableNames()[c.TableName ?? ""] ?? "other";
      units[`${name}:${kind}`] = (units[`${name}:${kind}`] ?? 0) + (c.CapacityUnits ?? 0);
    }
    if (eventUpdate) eventUpdates++;
    return result;
  };

beforeAll(async () => {
  // One event a queue message, AWS's default: docs/cost.md prices a deployment's requests.
  hg = await testHourglass(
    { HOURGLASS_RECOVERY_EVERY_SECONDS: "60", HOURGLASS_EVENTS_PER_MESSAGE: "1" },
    { handlers: [rec.handler] },
  );
  // A first start finds no shard epoch and rebuilds every shard from the (empty) journal. Done
  // before anything is counted: a rebuild page that races the first creates reads their items,
  // 5 to 10% more read units per job on a loaded machine, and that is no job's cost.
  await eventually(async () => {
    await hg.dispatcher.tick(1_000);
    for (let shard = 0; shard < hg.config.shards; shard++)
      if (!(await hg.index.hasEpoch(shard)) || (await hg.index.rebuildCursor(shard)) !== undefined)
        return undefined;
    return true;
  });
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
  const claim = hg.index.claim.bind(hg.index);
  hg.index.claim = async (...args: Parameters<typeof claim>) => {
    const result = await claim(...args);
    if (!result.epochMissing && result.claimed.length > 0) claims.push(result.claimed.length);
    return result;
  };
});

afterAll(async () => {
  await hg.destroy();
});

/**
 * A realistic payload of about 1 KB (what docs/cost.md prices): an order webhook's body. JSON
 * like this compresses about 3×, so the journal item stays under 1 KB (see shared/journal/payload.ts).
 */
function orderPayload(label: string) {
  return {
    label,
    order: {
      id: `ord_${label}`,
      customer: { id: "cus_8842", email: "buyer@example.com", name: "Ada Lovelace", locale: "en-GB" },
      lines: Array.from({ length: 6 }, (_, i) => ({
        sku: `SKU-${1000 + i}`,
        title: `Product number ${i} with a descriptive title`,
        quantity: i + 1,
        unitPrice: { amount: 1999 + i * 100, currency: "EUR" },
      })),
      shipping: {
        method: "standard",
        address: { line1: "12 Example Street", city: "London", postcode: "N1 9GU", country: "GB" },
      },
      callbackUrl: "https://hooks.example.com/orders/reminders?source=hourglass&kind=abandoned-cart",
    },
  };
}

/** Waits until the events table has taken `updates` more updates: completion writes trail the runs. */
const updatesLanded = async (since: number, updates: number) => {
  await eventually(
    async () => (eventUpdates - since >= updates ? true : undefined),
    60_000,
    "the completion writes to land",
  );
  await new Promise((done) => setTimeout(done, 500));
};

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

const perJobOf = (jobs: number) =>
  Object.fromEntries(
    Object.keys(counts)
      .sort()
      .map((k) => [k, Number(((counts[k] ?? 0) / jobs).toFixed(3))]),
  );
const unitsPerJobOf = (jobs: number) =>
  Object.fromEntries(
    Object.keys(units)
      .sort()
      .map((k) => [k, Number(((units[k] ?? 0) / jobs).toFixed(3))]),
  );

it("counts the AWS requests and capacity units of one job", async () => {
  const jobs = 300;
  const tenant = freshTenant("cost");
  const payloadBytes = JSON.stringify(orderPayload("job-000")).length;
  const runtime = startRuntime(hg, { tickMs: 1_000 });
  const started = Date.now();
  const updates = eventUpdates;
  try {
    // One at a time, as API calls arrive; due just beyond the 5 s look-ahead (judged against the
    // time the create computed runAt from), so the dispatcher claims and sends them.
    for (let i = 0; i < jobs; i++)
      await hg.events.schedule(tenant, {
        type: "test.record",
        payload: orderPayload(`job-${String(i).padStart(3, "0")}`),
        delaySeconds: 5.5,
      });
    await eventually(
      async () => (new Set(rec.runs.map((r) => r.id)).size >= jobs ? true : undefined),
      60_000,
      "every job to run",
    );
    // Let the last journal writes and acks land.
    await updatesLanded(updates, jobs);
  } finally {
    await runtime.stop();
  }
  const minutes = (Date.now() - started) / 60_000;
  const perJob = (key: string) => (counts[key] ?? 0) / jobs;
  const unitsPerJob = (key: string) => (units[key] ?? 0) / jobs;
  const report = {
    jobs,
    payloadBytes,
    minutes: Number(minutes.toFixed(2)),
    perJob: perJobOf(jobs),
    unitsPerJob: unitsPerJobOf(jobs),
    raw: counts,
    claims: claims.length,
    claimed: sum(claims),
  };
  // For reading after a run (docs/cost.md quotes it); not printed, so a passing run reads clean.
  writeFileSync(".hourglass/requests-per-job.json", `${JSON.stringify(report, null, 2)}\n`);

  expect(payloadBytes).toBeGreaterThan(900);
  // The event's own durable writes: one conditional put, one conditional update at success.
  expect(perJob("dynamodb:PutCommand") + perJob("dynamodb:PutItemCommand")).toBeCloseTo(1, 5);
  expect(eventUpdates / jobs).toBeGreaterThanOrEqual(1);
  expect(eventUpdates / jobs).toBeLessThan(1.3);
  // In units, with a 1 KB payload: the put (1, the item is under 1 KB) and its `pending` and
  // `byTenant` index entries (1 each); the success update (1) and the `pending` entry it removes
  // (1). A duplicate delivery's refused success write would add 1; none is expected here.
  const billed = REQUESTS_PER_JOB.single;
  expect(unitsPerJob("events:write")).toBeGreaterThanOrEqual(billed.wru);
  expect(unitsPerJob("events:write")).toBeLessThanOrEqual(billed.wru + 0.05);
  // One strongly consistent read of the item (≤ 4 KB) by the dispatcher, for the message (a
  // claim redelivered after its lease ran out would read it again).
  expect(unitsPerJob("events:read")).toBeGreaterThan(billed.rru - 0.05);
  expect(unitsPerJob("events:read")).toBeLessThanOrEqual(billed.rru + 0.05);
  // Sends: each job claimed and sent once, ten to a request at most, in as few requests as each
  // claim allows. Each shard claims on its own, so a tick sends at least one request per shard
  // that found work: per job that is 0.1 at best, and shards / (jobs a tick) when creates are
  // slow (0.39 on a loaded machine, with 4 shards and about ten creates a second). The number
  // of requests is exact whatever the load: one claim of k events is ceil(k / 10) requests.
  expect(perJob("sqs:SendMessageBatchCommand")).toBeGreaterThanOrEqual(billed.sqsSends);
  expect(sum(claims)).toBe(jobs);
  expect(sum(sendEntries)).toBe(jobs);
  expect(Math.max(...sendEntries)).toBeLessThanOrEqual(10);
  expect(sendEntries).toHaveLength(sum(claims.map((k) => Math.ceil(k / 10))));
  // Payload reads are batched: one request a claim (up to 100 items), so per job they follow the
  // claims' sizes as the sends do (0.33 a job on a loaded machine, against 0.06 when creates are fast).
  const reads = (counts["dynamodb:BatchGetCommand"] ?? 0) + (counts["dynamodb:BatchGetItemCommand"] ?? 0);
  expect(reads).toBeGreaterThan(0);
  expect(reads).toBe(sum(claims.map((k) => Math.ceil(k / 100))));
  // Every success write and every payload read happened: each job ran, and exactly once (a
  // duplicate run would pass a check of distinct ids, so the count of runs is checked too).
  expect(new Set(rec.runs.map((r) => r.id)).size).toBe(jobs);
  expect(rec.runs).toHaveLength(jobs * billed.attempts);
}, 120_000);

/**
 * The same count for the other paths docs/cost.md prices: batch submission (one conditional put
 * per event, no transaction), a job that fails once and is retried, a job cancelled before it is
 * dispatched, and an occurrence of a recurring schedule. Each writes
 * `.hourglass/requests-per-job-<path>.json`.
 */
const measure = async (path: string, jobs: number, work: () => Promise<void>) => {
  for (const key of Object.keys(counts)) delete counts[key];
  for (const key of Object.keys(units)) delete units[key];
  await work();
  const perJob = perJobOf(jobs);
  const unitsPerJob = unitsPerJobOf(jobs);
  writeFileSync(
    `.hourglass/requests-per-job-${path}.json`,
    `${JSON.stringify({ path, jobs, perJob, unitsPerJob }, null, 2)}\n`,
  );
  // A snapshot: what runs after the measurement (listing, say) must not count.
  const measured = { ...units };
  return {
    calls: (key: string) => perJob[key] ?? 0,
    units: (key: string) => (measured[key] ?? 0) / jobs,
  };
};

it("counts the AWS requests and units of one job on the batch, retry, cancel and schedule paths", async () => {
  const jobs = 200;
  const tenant = freshTenant("paths");
  const runtime = startRuntime(hg, { tickMs: 1_000 });
  try {
    const before = rec.runs.length;
    const batch = await measure("batch", jobs, async () => {
      const updates = eventUpdates;
      const results = await hg.events.scheduleBatch(
        tenant,
        // Half with the client's own ids (a conditional put each), half with ids Hourglass
        // generates (no earlier event can have them: BatchWriteItem, 25 a request).
        Array.from({ length: jobs }, (_, i) => ({
          ...(i % 2 === 0 && { id: `cost-batch-${i}` }),
          type: "test.record",
          payload: orderPayload(`b-${String(i).padStart(3, "0")}`),
          delaySeconds: 5.5,
        })),
      );
      expect(results.every((r) => r.ok)).toBe(true);
      await eventually(
        async () => (rec.runs.length >= before + jobs ? true : undefined),
        60_000,
        "the batch to run",
      );
      await updatesLanded(updates, jobs);
    });
    // No transaction (it would bill every put twice): a conditional put per client id, and
    // BatchWriteItem requests of 25 for generated ids.
    expect(
      batch.calls("dynamodb:TransactWriteCommand") + batch.calls("dynamodb:TransactWriteItemsCommand"),
    ).toBe(0);
    expect(batch.calls("dynamodb:PutCommand") + batch.calls("dynamodb:PutItemCommand")).toBeCloseTo(0.5, 5);
    expect(
      batch.calls("dynamodb:BatchWriteCommand") + batch.calls("dynamodb:BatchWriteItemCommand"),
    ).toBeCloseTo(4 / jobs, 5);
    // The same units as one at a time: 3 for the put and its index entries, 2 at success.
    const billedBatch = REQUESTS_PER_JOB.batch;
    expect(batch.units("events:write")).toBeGreaterThanOrEqual(billedBatch.wru);
    expect(batch.units("events:write")).toBeLessThanOrEqual(billedBatch.wru + 0.05);
    expect(batch.units("events:read")).toBeGreaterThan(billedBatch.rru - 0.05);
    expect(batch.units("events:read")).toBeLessThanOrEqual(billedBatch.rru + 0.05);
    expect(batch.calls("sqs:SendMessageBatchCommand")).toBeGreaterThanOrEqual(billedBatch.sqsSends);

    const retryStart = rec.runs.length;
    const retry = await measure("retry", jobs, async () => {
      const updates = eventUpdates;
      for (let i = 0; i < jobs; i++)
        await hg.events.schedule(tenant, {
          type: "test.record",
          payload: { failTimes: 1 },
          delaySeconds: 5.5,
        });
      // Two runs per job: the failure and the retry.
      await eventually(
        async () => (rec.runs.length >= retryStart + 2 * jobs ? true : undefined),
        90_000,
        "every job to fail once and succeed",
      );
      await updatesLanded(updates, 2 * jobs);
    });
    // The retry record and the success record.
    expect(
      retry.calls("dynamodb:UpdateCommand") + retry.calls("dynamodb:UpdateItemCommand"),
    ).toBeGreaterThanOrEqual(2);
    // Put 3; the retry record 1 plus the `pending` entry moved to the new due time (2: a
    // changed index key is a delete and a put); success 2.
    const billedRetry = REQUESTS_PER_JOB.retry;
    expect(retry.units("events:write")).toBeGreaterThanOrEqual(billedRetry.wru);
    expect(retry.units("events:write")).toBeLessThanOrEqual(billedRetry.wru + 0.05);
    // The retry goes straight to the queue with the payload it already had: no second read.
    expect(retry.units("events:read")).toBeLessThanOrEqual(billedRetry.rru + 0.05);
    // The first dispatch (ten to a request at best) and the retry, due within the look-ahead, on its own.
    expect(retry.calls("sqs:SendMessageBatchCommand")).toBeGreaterThanOrEqual(billedRetry.sqsSends);
    expect(rec.runs.length - retryStart).toBe(jobs * billedRetry.attempts);

    // Half an hour ahead: near, so indexed by the create, and well inside the loader's watermark.
    // At the one-hour horizon itself the loader's next sweep reads an event the create indexed
    // (PRESENT, 1 RRU) whenever it runs between the create and the cancel: once a minute, so on
    // a loaded machine, about one of these 200 (docs/horizon.md).
    const cancel = await measure("cancel", jobs, async () => {
      for (let i = 0; i < jobs; i++) {
        const { event } = await hg.events.schedule(tenant, {
          type: "test.record",
          payload: orderPayload(`c-${i}`),
          delaySeconds: 1_800,
        });
        await hg.events.cancel(tenant, event.id);
      }
    });
    expect(cancel.calls("dynamodb:PutCommand") + cancel.calls("dynamodb:PutItemCommand")).toBeCloseTo(1, 5);
    const billedCancel = REQUESTS_PER_JOB.cancel;
    expect(cancel.calls("sqs:SendMessageBatchCommand")).toBe(billedCancel.sqsSends);
    // Put 3; the cancel record 1 and the `pending` entry removed 1.
    expect(cancel.units("events:write")).toBe(billedCancel.wru);
    expect(cancel.units("events:read")).toBe(billedCancel.rru);

    // A recurring schedule's occurrences: created by the dispatcher's materializer in batches.
    const schedules = 10;
    const occurrenceStart = rec.runs.length;
    let occurrences = 0;
    const occurrence = await measure("schedule", 1, async () => {
      for (let i = 0; i < schedules; i++)
        await hg.schedules!.create(tenant, {
          id: `cost-${i}`,
          rate: "1 second",
          event: { type: "test.record", payload: orderPayload(`s-${i}`) },
        });
      await eventually(
        async () => (rec.runs.length >= occurrenceStart + 200 ? true : undefined),
        90_000,
        "200 occurrences to run",
      );
      for (let i = 0; i < schedules; i++) await hg.schedules!.delete(tenant, `cost-${i}`);
      await new Promise((done) => setTimeout(done, 2_000));
    });
    // Every occurrence created (run, or cancelled by the delete before it ran) is one job.
    // Counted after the measurement: listing reads items too.
    for (let i = 0; i < schedules; i++) {
      let cursor: string | undefined;
      do {
        const page = await hg.events.list(tenant, { scheduleId: `cost-${i}`, limit: 100, cursor });
        occurrences += page.events.length;
        cursor = page.cursor;
      } while (cursor);
    }
    const perOccurrence = (key: string) => occurrence.units(key) / occurrences;
    writeFileSync(
      ".hourglass/requests-per-job-schedule-units.json",
      `${JSON.stringify(
        {
          occurrences,
          eventsWrite: perOccurrence("events:write"),
          eventsRead: perOccurrence("events:read"),
          schedulesWrite: perOccurrence("schedules:write"),
          schedulesRead: perOccurrence("schedules:read") + perOccurrence("schedules:query"),
        },
        null,
        2,
      )}\n`,
    );
    expect(occurrences).toBeGreaterThanOrEqual(200);
    // The occurrence's own event: as a batch create (the materializer creates them in batches).
    // Occurrences cancelled by the delete cost less (no read; cancel instead of success).
    expect(perOccurrence("events:write")).toBeGreaterThanOrEqual(4.5);
    expect(perOccurrence("events:write")).toBeLessThanOrEqual(5.05);
    expect(perOccurrence("events:read")).toBeLessThanOrEqual(1.05);
    // The schedule's advance: its item and its `due` index entry (projection ALL, so the whole
    // item again, twice: a moved index key is a delete and a put), shared by the occurrences one
    // pass materializes. A 1-second rate with 1-second ticks advances about once per
    // occurrence here: about 5 units. Creating the ten schedules (transactions with the
    // per-tenant counter) counts too.
    expect(perOccurrence("schedules:write")).toBeGreaterThan(0);
    expect(perOccurrence("schedules:write")).toBeLessThanOrEqual(8);
  } finally {
    await runtime.stop();
  }
}, 300_000);
