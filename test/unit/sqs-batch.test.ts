import type { SQSRecord } from "aws-lambda";
import { describe, expect, it } from "vitest";
import { createSqsBatchHandler } from "../../shared/events/sqs-batch.ts";
import type { Worker, WorkResult } from "../../shared/events/worker.ts";
import { silentLogger } from "../../shared/logger.ts";
import { MalformedMessageError } from "../../shared/model/errors.ts";
import { decodeBody, encodeBundle, encodeMessage } from "../../shared/model/message.ts";

/** A record whose body names `id`, in the shape Lambda (and the local poller) hands over. */
function record(id: string): SQSRecord {
  return {
    messageId: id,
    receiptHandle: `rh-${id}`,
    body: encodeMessage({ member: `t/${id}`, shard: 0, gen: 1, runAt: 0, attempt: 0 }),
    attributes: {
      ApproximateReceiveCount: "1",
      SentTimestamp: "0",
      SenderId: "local",
      ApproximateFirstReceiveTimestamp: "0",
    },
    messageAttributes: {},
    md5OfBody: "",
    eventSource: "aws:sqs",
    eventSourceARN: "arn:aws:sqs:local:000000000000:q",
    awsRegion: "us-east-1",
  };
}

/** A worker whose calls settle when the test says: `fail(id)` throws (outcome not recorded), `pass(id)` returns. */
function gatedWorker() {
  const gates = new Map<string, { pass: () => void; fail: () => void }>();
  const worker = {
    process: (message: { member: string }) =>
      new Promise<WorkResult>((resolve, reject) => {
        gates.set(message.member.slice(2), {
          pass: () => resolve({ outcome: "succeeded" }),
          fail: () => reject(new Error("journal write failed")),
        });
      }),
  } as unknown as Worker;
  return { worker, gates };
}

const turn = () => new Promise((done) => setImmediate(done));

describe("the SQS batch handler, called for several batches at once (the local poller does)", () => {
  it("reports each batch's own failures: a failure is never lost to a batch that started after it", async () => {
    const { worker, gates } = gatedWorker();
    const handle = createSqsBatchHandler(worker, silentLogger);
    const first = handle({ Records: [record("a1"), record("a2")] });
    await turn();
    gates.get("a1")!.fail();
    await turn();
    // A second batch arrives while the first is still running.
    const second = handle({ Records: [record("b1"), record("b2")] });
    await turn();
    gates.get("b1")!.fail();
    gates.get("a2")!.pass();
    await turn();
    gates.get("b2")!.pass();
    const [a, b] = await Promise.all([first, second]);
    // Whatever is not listed here, the poller deletes: a1 and b1 must stay in the queue.
    expect(a.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(["a1"]);
    expect(b.batchItemFailures.map((f) => f.itemIdentifier)).toEqual(["b1"]);
  });
});

describe("the SQS batch handler, one record at a time (how the local poller calls it)", () => {
  it("answers as the processor does: nothing on success, the record on a failure, nothing for a malformed body", async () => {
    const { worker, gates } = gatedWorker();
    const handle = createSqsBatchHandler(worker, silentLogger);
    const ok = handle({ Records: [record("s1")] });
    const failed = handle({ Records: [record("s2")] });
    await turn();
    gates.get("s2")!.fail();
    gates.get("s1")!.pass();
    expect(await ok).toEqual({ batchItemFailures: [] });
    expect(await failed).toEqual({ batchItemFailures: [{ itemIdentifier: "s2" }] });
    // Retrying cannot make it readable: dropped, not listed (it would come back forever).
    const malformed = { ...record("s3"), body: "not a message" };
    expect(await handle({ Records: [malformed] })).toEqual({ batchItemFailures: [] });
    expect(gates.has("s3")).toBe(false);
  });
});

describe("the SQS batch handler, a record that holds several events (a bundle)", () => {
  const bundled = (id: string, members: string[]) => ({
    ...record(id),
    body: encodeBundle(
      members.map((m) => encodeMessage({ member: `t/${m}`, shard: 0, gen: 1, runAt: 0, attempt: 0 })),
    ),
  });

  it("runs every event of it at once, and lists the record if any event's outcome was not recorded", async () => {
    const { worker, gates } = gatedWorker();
    const results: WorkResult[] = [];
    const handle = createSqsBatchHandler(worker, silentLogger, (r) => results.push(r));
    const failing = handle({ Records: [bundled("r1", ["x1", "x2", "x3"])] });
    const passing = handle({ Records: [bundled("r2", ["y1", "y2"])] });
    await turn();
    // All five started before any settled: one slow event does not hold back its neighbours.
    expect([...gates.keys()].sort()).toEqual(["x1", "x2", "x3", "y1", "y2"]);
    gates.get("x2")!.fail();
    await turn();
    let settled = false;
    void failing.then(() => {
      settled = true;
    });
    await turn();
    // Not answered while x1 and x3 still run: the message must not come back under them.
    expect(settled).toBe(false);
    for (const id of ["x1", "x3", "y1", "y2"]) gates.get(id)!.pass();
    expect(await failing).toEqual({ batchItemFailures: [{ itemIdentifier: "r1" }] });
    expect(await passing).toEqual({ batchItemFailures: [] });
    expect(results).toHaveLength(4);
  });

  it("runs the events it can read when one element of it is unreadable, and sets that one aside", async () => {
    const { worker, gates } = gatedWorker();
    const errors: Record<string, unknown>[] = [];
    const logger = {
      ...silentLogger,
      error: (_: string, attributes?: Record<string, unknown>) => errors.push(attributes ?? {}),
    };
    const handle = createSqsBatchHandler(worker, logger);
    const good = (m: string) => encodeMessage({ member: `t/${m}`, shard: 0, gen: 1, runAt: 0, attempt: 0 });
    const mixed = { ...record("r4"), body: `[3,${good("m1")},["t/bad",0],${good("m2")}]` };
    const answer = handle({ Records: [mixed] });
    await turn();
    expect([...gates.keys()].sort()).toEqual(["m1", "m2"]);
    gates.get("m1")!.pass();
    gates.get("m2")!.pass();
    // Answered as done: retrying cannot make the bad element readable, and its event is still
    // claimed in the index, so the dispatcher sends it again when the claim's lease ends.
    expect(await answer).toEqual({ batchItemFailures: [] });
    expect(errors).toEqual([{ messageId: "r4", unreadable: 1, readable: 2 }]);
  });

  it("reads a bundle only when its count, as the consumer reads it, matches its elements", () => {
    const one = encodeMessage({ member: "t/a", shard: 0, gen: 1, runAt: 0, attempt: 0 });
    expect(decodeBody(`[2,${one},${one}]`)).toMatchObject({ unreadable: 0 });
    expect(decodeBody(`[2,${one},{}]`)).toMatchObject({ unreadable: 1 });
    // The consumer counted its slots by the count (eventsInBody): a body it miscounts is not ours.
    for (const body of [
      `[3,${one},${one}]`,
      `[2,${one},${one},${one}]`,
      `[ 2,${one},${one}]`,
      `[1,${one}]`,
    ]) {
      expect(() => decodeBody(body)).toThrow(MalformedMessageError);
    }
    expect(() => decodeBody("[2,{},[]]")).toThrow(MalformedMessageError);
  });

  it("drops a bundle with nothing readable in it rather than retrying it forever", async () => {
    const { worker, gates } = gatedWorker();
    const handle = createSqsBatchHandler(worker, silentLogger);
    const broken = { ...record("r3"), body: '[3,["t/a",0,1],{}]' };
    expect(await handle({ Records: [broken] })).toEqual({ batchItemFailures: [] });
    expect(gates.size).toBe(0);
  });
});
