import { setTimeout as pause } from "node:timers/promises";
import {
  BatchGetCommand,
  BatchWriteCommand,
  type BatchWriteWriteRequest,
  type DynamoDBDocumentClient,
} from "@aws-sdk/lib-dynamodb";
import type { NativeAttributeValue } from "@aws-sdk/util-dynamodb";
import pMap from "p-map";
import { UnprocessedRequestError } from "./errors.ts";
import { projection } from "./expression.ts";
import type { Item } from "./failures.ts";

/** BatchGetItem's and BatchWriteItem's limits: keys read, and puts written, per request. */
const GET_LIMIT = 100;
const WRITE_LIMIT = 25;
/**
 * Retries of what DynamoDB leaves unprocessed (it is throttling): 40 ms doubling to a second, about
 * eight seconds in all. Still throttled after that, the call fails rather than wait without end.
 */
const MAX_ROUNDS = 12;

type Key = Record<string, NativeAttributeValue>;

export interface BatchGetSpec {
  readonly table: string;
  /** Distinct keys (BatchGetItem refuses a repeated one), any number of them. */
  readonly keys: readonly Key[];
  readonly consistent?: boolean;
  /** The attributes to read; all of them when absent. */
  readonly attributes?: readonly string[];
  /** Requests of up to 100 keys in flight at once. */
  readonly concurrency: number;
}

/**
 * Reads items by key, 100 a request, retrying the keys DynamoDB leaves unprocessed. Found items
 * only, in no order. `I` names the shape the caller stores in that table (not validated).
 */
export async function batchGet<I extends object = Item>(
  doc: DynamoDBDocumentClient,
  spec: BatchGetSpec,
): Promise<I[]> {
  const read = {
    ...(spec.consistent !== undefined && { ConsistentRead: spec.consistent }),
    ...(spec.attributes && projection(spec.attributes)),
  };
  const found: I[] = [];
  await pMap(
    chunks(spec.keys, GET_LIMIT),
    (keys) =>
      untilProcessed("BatchGetItem", keys, async (request) => {
        const reply = await doc.send(
          new BatchGetCommand({ RequestItems: { [spec.table]: { ...read, Keys: request } } }),
        );
        found.push(...((reply.Responses?.[spec.table] ?? []) as I[]));
        return reply.UnprocessedKeys?.[spec.table]?.Keys;
      }),
    { concurrency: spec.concurrency },
  );
  return found;
}

export interface BatchPutSpec {
  readonly table: string;
  /** Unconditional puts: BatchWriteItem has no conditions, so use it only where none is needed. */
  readonly items: readonly object[];
  /** The table's key attributes: how an item DynamoDB left unprocessed is told from the others. */
  readonly key: readonly string[];
  /** Requests of up to 25 puts in flight at once. */
  readonly concurrency: number;
  /** Sends of one request's unprocessed items after the first. @default 12 (about eight seconds) */
  readonly retries?: number;
}

/** An item a batch put did not write, by its position in `items`, and why. */
export interface BatchPutFailure {
  readonly index: number;
  readonly error: Error;
}

/**
 * Writes items, 25 a request, retrying the ones DynamoDB leaves unprocessed with a growing pause.
 * Answers the items it could not write: still unprocessed after every retry (UnprocessedRequestError)
 * or in a request that failed (the SDK's error, after its own retries). Every item not listed is
 * written; none is dropped unreported. A request that failed may still have been applied, so a
 * listed item is "not known to be written", never "known absent".
 */
export async function batchPut(doc: DynamoDBDocumentClient, spec: BatchPutSpec): Promise<BatchPutFailure[]> {
  const keyOf = (item: object) =>
    JSON.stringify(spec.key.map((name) => (item as Record<string, unknown>)[name]));
  const requests = spec.items.map((item, index) => ({
    index,
    key: keyOf(item),
    request: { PutRequest: { Item: item as Key } } satisfies BatchWriteWriteRequest,
  }));
  const failed: BatchPutFailure[] = [];
  await pMap(
    chunks(requests, WRITE_LIMIT),
    async (chunk) => {
      let left = chunk;
      for (let round = 0; left.length > 0; round++) {
        if (round > (spec.retries ?? MAX_ROUNDS)) {
          const error = new UnprocessedRequestError("BatchWriteItem", round);
          for (const { index } of left) failed.push({ index, error });
          return;
        }
        if (round > 0) await pause(Math.min(1_000, 20 * 2 ** round));
        let unprocessed: BatchWriteWriteRequest[];
        try {
          const reply = await doc.send(
            new BatchWriteCommand({ RequestItems: { [spec.table]: left.map(({ request }) => request) } }),
          );
          unprocessed = reply.UnprocessedItems?.[spec.table] ?? [];
        } catch (error) {
          for (const { index } of left) failed.push({ index, error: error as Error });
          return;
        }
        const again = new Set(unprocessed.map((r) => (r.PutRequest?.Item ? keyOf(r.PutRequest.Item) : "")));
        left = left.filter(({ key }) => again.has(key));
      }
    },
    { concurrency: spec.concurrency },
  );
  return failed.sort((a, b) => a.index - b.index);
}

/** Sends `first`, then what each reply left unprocessed, with a growing pause, until nothing is left. */
async function untilProcessed<T>(
  operation: UnprocessedRequestError["operation"],
  first: T[],
  send: (request: T[]) => Promise<T[] | undefined>,
): Promise<void> {
  let request: T[] | undefined = first;
  for (let round = 0; request && request.length > 0; round++) {
    if (round > MAX_ROUNDS) throw new UnprocessedRequestError(operation, round);
    if (round > 0) await pause(Math.min(1_000, 20 * 2 ** round));
    request = await send(request);
  }
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
