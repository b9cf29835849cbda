import { randomBytes } from "node:crypto";
import {
  DeleteTableCommand,
  type DynamoDBClient,
  ResourceNotFoundException,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../shared/aws.ts";
import { batchGet, batchPut } from "../../shared/dynamo/batch.ts";
import { and, equals, exists, greaterThan, notExists, or } from "../../shared/dynamo/conditions.ts";
import { UnprocessedRequestError } from "../../shared/dynamo/errors.ts";
import { increment, onlyIf, update } from "../../shared/dynamo/expression.ts";
import { onConditionFailed, transactionRefusals } from "../../shared/dynamo/failures.ts";
import { type TransactItems, transact } from "../../shared/dynamo/transact.ts";
import { ensureTable } from "../../shared/local/provision.ts";
import { LEDGER_TABLE } from "../../shared/resources.ts";

/**
 * The DynamoDB toolkit against the real DynamoDB Local: expressions DynamoDB accepts and applies,
 * refusals carrying the item as it stood, transactions retried on conflict and rebuilt each time,
 * batch reads of any size that get back what DynamoDB left unprocessed.
 */
const table = `t${randomBytes(4).toString("hex")}-dynamo`;
let client: DynamoDBClient;
let doc: DynamoDBDocumentClient;

beforeAll(async () => {
  client = createDynamoClient();
  doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  // A table keyed like the ledger's: `pk` and `sk`, both strings.
  await ensureTable(client, table, LEDGER_TABLE);
});

afterAll(async () => {
  await client.send(new DeleteTableCommand({ TableName: table }));
});

/** A client whose every request of `command` (as sent, marshalled) is seen by `watch` first. */
function watched(
  command: RegExp,
  watch: (input: Record<string, unknown>, command: string) => void,
): DynamoDBDocumentClient {
  const raw = createDynamoClient();
  raw.middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? "";
      if (command.test(name)) watch(args.input as Record<string, unknown>, name);
      return next(args);
    },
    { step: "build", name: "watch" },
  );
  return DynamoDBDocumentClient.from(raw);
}

/** What DynamoDB answers a transaction that met a concurrent one on one of its items. */
const conflict = () =>
  new TransactionCanceledException({
    message:
      "Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]",
    $metadata: {},
    CancellationReasons: [{ Code: "None" }, { Code: "TransactionConflict" }],
  });

const read = async (pk: string, sk: string) =>
  (await doc.send(new GetCommand({ TableName: table, Key: { pk, sk }, ConsistentRead: true }))).Item;

describe("update", () => {
  it("sets, adds, increments and removes under its condition, names that need aliasing included", async () => {
    const key = { pk: "lease", sk: "update" };
    const first = await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        ...update({
          set: { owner: "me", "expires-at": 100, token: increment(1), skipped: undefined },
          add: { renewals: 0 },
          if: notExists("pk"),
        }),
        ReturnValues: "ALL_NEW",
      }),
    );
    expect(first.Attributes).toEqual({ ...key, owner: "me", "expires-at": 100, token: 1, renewals: 0 });

    const second = await doc.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        ...update({
          set: { token: increment(1), name: "reserved word" },
          add: { renewals: 2, tags: new Set(["a", "b"]) },
          remove: ["owner"],
          if: and(equals("owner", "me"), greaterThan("expires-at", 50), or(notExists("x"), equals("x", 1))),
        }),
        ReturnValues: "ALL_NEW",
      }),
    );
    expect(second.Attributes).toEqual({
      ...key,
      "expires-at": 100,
      token: 2,
      renewals: 2,
      name: "reserved word",
      tags: new Set(["a", "b"]),
    });
  });

  it("turns a refused condition into the caller's answer, carrying the item as it stood", async () => {
    const key = { pk: "lease", sk: "refused" };
    await doc.send(new PutCommand({ TableName: table, Item: { ...key, owner: "them", token: 4 } }));
    const write = doc.send(
      new UpdateCommand({
        TableName: table,
        Key: key,
        ...update({ set: { owner: "me" }, if: or(notExists("pk"), notExists("owner")) }),
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    const answer = await onConditionFailed(
      write.then(() => "written"),
      (existing) => existing,
    );
    expect(answer).toEqual({ ...key, owner: "them", token: 4 });
    expect(await read(key.pk, key.sk)).toEqual({ ...key, owner: "them", token: 4 });

    // No item to carry: the refusal says so.
    const absent = onConditionFailed(
      doc.send(
        new UpdateCommand({
          TableName: table,
          Key: { pk: "lease", sk: "absent" },
          ...update({ set: { owner: "me" }, if: exists("pk") }),
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      ),
      (existing) => ({ refused: true, existing }),
    );
    expect(await absent).toEqual({ refused: true, existing: undefined });
  });

  it("lets every other failure through as the SDK threw it", async () => {
    const write = doc.send(
      new UpdateCommand({
        TableName: `${table}-missing`,
        Key: { pk: "x", sk: "x" },
        ...update({ set: { a: 1 }, if: exists("pk") }),
      }),
    );
    await expect(onConditionFailed(write, () => "refused")).rejects.toBeInstanceOf(ResourceNotFoundException);
  });
});

describe("transact", () => {
  const entries = (pk: string) =>
    doc
      .send(
        new QueryCommand({
          TableName: table,
          KeyConditionExpression: "pk = :pk",
          ExpressionAttributeValues: { ":pk": pk },
          ConsistentRead: true,
        }),
      )
      .then((reply) => reply.Items ?? []);

  /** A counter and an entry whose id is taken when the items are built, as the ledger's are. */
  const counterAndEntry = (pk: string, builds: { count: number }) => (): TransactItems => {
    builds.count++;
    return [
      {
        Update: {
          TableName: table,
          Key: { pk, sk: "counter" },
          ...update({ set: { n: increment(1) } }),
        },
      },
      {
        Put: {
          TableName: table,
          Item: { pk: `${pk}-entries`, sk: `attempt-${builds.count}` },
          ...onlyIf(notExists("pk")),
        },
      },
    ];
  };

  it("reports a refused condition per action, with the item it found, and does not retry it", async () => {
    await doc.send(new PutCommand({ TableName: table, Item: { pk: "receipt", sk: "r1", quantity: 5 } }));
    let builds = 0;
    const error = await transact(doc, () => {
      builds++;
      return [
        {
          Update: { TableName: table, Key: { pk: "receipt-counter", sk: "c" }, ...update({ add: { n: 7 } }) },
        },
        {
          Put: {
            TableName: table,
            Item: { pk: "receipt", sk: "r1", quantity: 7 },
            ...onlyIf(notExists("pk")),
            ReturnValuesOnConditionCheckFailure: "ALL_OLD",
          },
        },
      ];
    }).then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(builds).toBe(1);
    expect(transactionRefusals(error)).toEqual([
      undefined,
      { existing: { pk: "receipt", sk: "r1", quantity: 5 } },
    ]);
    // All or nothing: the counter was not touched.
    expect(await read("receipt-counter", "c")).toBeUndefined();
    expect(transactionRefusals(new Error("not a transaction"))).toBeUndefined();
  });

  it("retries a conflict with new items each attempt, and commits only the last", async () => {
    let faults = 2;
    const faulty = watched(/^TransactWriteItems/, () => {
      // The conflict is DynamoDB's answer before anything commits, as a real one is.
      if (faults-- > 0) throw conflict();
    });
    const builds = { count: 0 };
    let refreshed = 0;
    await transact(faulty, counterAndEntry("conflicted", builds), {
      refresh: async () => {
        refreshed++;
      },
    });
    expect(builds.count).toBe(3);
    // What the build reads is read again before each conflict's retry.
    expect(refreshed).toBe(2);
    expect(await read("conflicted", "counter")).toMatchObject({ n: 1 });
    // The entry is the one built for the attempt that committed, not the first attempt's.
    expect((await entries("conflicted-entries")).map((item) => item.sk)).toEqual(["attempt-3"]);
  });

  it("sends anew a transaction DynamoDB says is still in progress", async () => {
    let faults = 1;
    const faulty = watched(/^TransactWriteItems/, () => {
      if (faults-- > 0)
        throw Object.assign(new Error("the transaction is being processed"), {
          name: "TransactionInProgressException",
        });
    });
    const builds = { count: 0 };
    await transact(faulty, counterAndEntry("in-progress", builds));
    expect(builds.count).toBe(2);
    expect(await read("in-progress", "counter")).toMatchObject({ n: 1 });
  });

  it("gives up after eight retries, and never retries a conflict that came with a refused condition", async () => {
    const always = watched(/^TransactWriteItems/, () => {
      throw conflict();
    });
    const builds = { count: 0 };
    await expect(transact(always, counterAndEntry("endless", builds))).rejects.toBeInstanceOf(
      TransactionCanceledException,
    );
    expect(builds.count).toBe(9);

    const refusedToo = watched(/^TransactWriteItems/, () => {
      throw new TransactionCanceledException({
        message: "Transaction cancelled [ConditionalCheckFailed, TransactionConflict]",
        $metadata: {},
        CancellationReasons: [{ Code: "ConditionalCheckFailed" }, { Code: "TransactionConflict" }],
      });
    });
    const once = { count: 0 };
    await expect(transact(refusedToo, counterAndEntry("refused-too", once))).rejects.toBeInstanceOf(
      TransactionCanceledException,
    );
    expect(once.count).toBe(1);
    expect(await read("endless", "counter")).toBeUndefined();
  });

  it("retries refusals called stale beyond the conflicts' eight, within a budget of their own", async () => {
    const stale = watched(/^TransactWriteItems/, () => {
      throw new TransactionCanceledException({
        message: "Transaction cancelled [ConditionalCheckFailed]",
        $metadata: {},
        CancellationReasons: [{ Code: "ConditionalCheckFailed" }],
      });
    });
    const builds = { count: 0 };
    let asked = 0;
    await expect(
      transact(stale, counterAndEntry("stale-budget", builds), {
        retryRefused: () => {
          asked++;
          return true;
        },
      }),
    ).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(builds.count).toBe(65);
    expect(asked).toBe(65);
  });

  it("sends again a refusal that retryRefused calls stale, built with what the refusal said", async () => {
    await doc.send(new PutCommand({ TableName: table, Item: { pk: "numbered", sk: "counter", seq: 5 } }));
    // A number read before the attempt, which another writer has moved since (5, not 3).
    let known = 3;
    const sent: number[] = [];
    await transact(
      doc,
      () => {
        sent.push(known);
        return [
          {
            Update: {
              TableName: table,
              Key: { pk: "numbered", sk: "counter" },
              ...update({ add: { seq: 1 }, if: equals("seq", known) }),
              ReturnValuesOnConditionCheckFailure: "ALL_OLD",
            },
          },
          { Put: { TableName: table, Item: { pk: "numbered-entries", sk: `n${known + 1}` } } },
        ];
      },
      {
        retryRefused: (error) => {
          const seen = Number(transactionRefusals(error)?.[0]?.existing?.seq);
          if (seen === known) return false;
          known = seen;
          return true;
        },
      },
    );
    expect(sent).toEqual([3, 5]);
    expect(await read("numbered", "counter")).toMatchObject({ seq: 6 });
    expect((await entries("numbered-entries")).map((item) => item.sk)).toEqual(["n6"]);
  });

  it("commits concurrent transactions on one item, each exactly once", async () => {
    const builds = { count: 0 };
    await Promise.all(Array.from({ length: 30 }, () => transact(doc, counterAndEntry("busy", builds))));
    expect(await read("busy", "counter")).toMatchObject({ n: 30 });
    expect(await entries("busy-entries")).toHaveLength(30);
  });
});

describe("batchGet and batchPut", () => {
  it("writes and reads any number of items, 25 and 100 a request, absent keys left out", async () => {
    const sent: { command: string; items: number }[] = [];
    const counted = watched(/^Batch/, (input, command) => {
      const request = (input.RequestItems as Record<string, { Keys: unknown[] } | unknown[]>)[table]!;
      sent.push({ command, items: Array.isArray(request) ? request.length : request.Keys.length });
    });
    const items = Array.from({ length: 230 }, (_, i) => ({
      pk: "many",
      sk: String(i).padStart(3, "0"),
      n: i,
    }));
    expect(await batchPut(counted, { table, items, key: ["pk", "sk"], concurrency: 4 })).toEqual([]);
    expect(sent.filter((s) => s.command === "BatchWriteItemCommand").map((s) => s.items)).toEqual([
      25, 25, 25, 25, 25, 25, 25, 25, 25, 5,
    ]);

    const keys = [...items.map(({ pk, sk }) => ({ pk, sk })), { pk: "many", sk: "absent" }];
    const found = await batchGet<{ sk: string; n: number }>(counted, {
      table,
      keys,
      consistent: true,
      attributes: ["sk", "n"],
      concurrency: 2,
    });
    expect(sent.filter((s) => s.command === "BatchGetItemCommand").map((s) => s.items)).toEqual([
      100, 100, 31,
    ]);
    expect(found.sort((a, b) => a.n - b.n)).toEqual(items.map(({ sk, n }) => ({ sk, n })));
  });

  it("asks again for the keys DynamoDB left unprocessed (a reply is at most 16 MB)", async () => {
    // 48 items of about 380 KB: some 18 MB, more than one BatchGetItem reply may carry.
    const body = "x".repeat(380_000);
    const items = Array.from({ length: 48 }, (_, i) => ({
      pk: "large",
      sk: String(i).padStart(2, "0"),
      body,
    }));
    expect(await batchPut(doc, { table, items, key: ["pk", "sk"], concurrency: 2 })).toEqual([]);
    const asked: number[] = [];
    const counted = watched(/^BatchGetItem/, (input) => {
      asked.push((input.RequestItems as Record<string, { Keys: unknown[] }>)[table]!.Keys.length);
    });
    const found = await batchGet<{ sk: string; body: string }>(counted, {
      table,
      keys: items.map(({ pk, sk }) => ({ pk, sk })),
      concurrency: 1,
    });
    // The first reply left keys out; the next request asked for those only, and got them.
    expect(asked.length).toBeGreaterThan(1);
    expect(asked[0]).toBe(48);
    expect(asked[1]).toBeLessThan(48);
    expect(found.map((item) => item.sk).sort()).toEqual(items.map((item) => item.sk));
    expect(found.every((item) => item.body === body)).toBe(true);
  });
});

describe("batchPut when DynamoDB leaves items unprocessed or a request fails", () => {
  /**
   * A client whose BatchWriteItem leaves `stuck` items unprocessed every time, `once` items the
   * first time only, and fails a request that carries a `broken` item.
   */
  function throttling(sends: number[]): DynamoDBDocumentClient {
    const raw = createDynamoClient();
    const seen = new Set<string>();
    raw.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== "BatchWriteItemCommand") return next(args);
        // Before the document client marshals the request, and after it unmarshals the reply.
        const input = args.input as {
          RequestItems: Record<string, { PutRequest: { Item: { sk: string } } }[]>;
        };
        const requests = input.RequestItems[table]!;
        sends.push(requests.length);
        const sk = (r: (typeof requests)[number]) => r.PutRequest.Item.sk;
        if (requests.some((r) => sk(r).startsWith("broken"))) throw new Error("the request failed");
        const left = requests.filter(
          (r) => sk(r).startsWith("stuck") || (sk(r).startsWith("once") && !seen.has(sk(r))),
        );
        for (const r of requests) seen.add(sk(r));
        const kept = requests.filter((r) => !left.includes(r));
        const unprocessed = left.length > 0 ? { [table]: left } : {};
        if (kept.length === 0)
          return { output: { UnprocessedItems: unprocessed, $metadata: {} }, response: {} };
        const result = await next({ ...args, input: { ...input, RequestItems: { [table]: kept } } });
        (result.output as { UnprocessedItems?: unknown }).UnprocessedItems = unprocessed;
        return result;
      },
      { step: "initialize", name: "throttle" },
    );
    return DynamoDBDocumentClient.from(raw);
  }

  it("retries the unprocessed items, and reports each item still unwritten, never dropping one", async () => {
    const sends: number[] = [];
    const items = [
      ...Array.from({ length: 20 }, (_, i) => ({ pk: "throttled", sk: `ok-${i}` })),
      { pk: "throttled", sk: "once-0" },
      { pk: "throttled", sk: "stuck-0" },
      { pk: "throttled", sk: "once-1" },
      { pk: "throttled", sk: "stuck-1" },
      { pk: "throttled", sk: "ok-20" },
      ...Array.from({ length: 3 }, (_, i) => ({ pk: "throttled", sk: `broken-${i}` })),
    ];
    // Items 25 to 27 are their own request (the second of 25), which fails.
    const failed = await batchPut(throttling(sends), {
      table,
      items,
      key: ["pk", "sk"],
      concurrency: 2,
      retries: 2,
    });
    expect(failed.map(({ index }) => items[index]!.sk)).toEqual([
      "stuck-0",
      "stuck-1",
      "broken-0",
      "broken-1",
      "broken-2",
    ]);
    expect(failed.slice(0, 2).every(({ error }) => error instanceof UnprocessedRequestError)).toBe(true);
    expect(failed[2]!.error.message).toBe("the request failed");
    // The first request, then its four unprocessed items (retry 1), then the two stuck ones (retry 2).
    expect(sends.filter((n) => n !== 3)).toEqual([25, 4, 2]);
    for (const item of items) {
      const written = (await read(item.pk, item.sk)) !== undefined;
      expect({ sk: item.sk, written }).toEqual({ sk: item.sk, written: /^(ok|once)/.test(item.sk) });
    }
  });
});
