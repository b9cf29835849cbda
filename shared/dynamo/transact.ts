import { setTimeout as pause } from "node:timers/promises";
import { TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import {
  type DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from "@aws-sdk/lib-dynamodb";

/** The actions of one TransactWriteItems request (at most 100). */
export type TransactItems = NonNullable<TransactWriteCommandInput["TransactItems"]>;

const CONFLICT_RETRIES = 8;

/**
 * One transaction, retried when DynamoDB cancels it for a conflict with a concurrent one. The items
 * are built again for every attempt, so anything taken at build time (a ledger entry's id is a
 * ULID: its time orders the ledger) is taken when the attempt is sent, not when a first attempt
 * was: an entry whose transaction waited out conflicts must not sort before the entries that
 * committed meanwhile. A refused condition is never retried: `transactionRefusals` reads it.
 */
export async function transact(doc: DynamoDBDocumentClient, build: () => TransactItems): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: build() }));
      return;
    } catch (error) {
      if (!isConflict(error) || attempt >= CONFLICT_RETRIES) throw error;
      // Full jitter, so the transactions that conflicted do not meet again on the next attempt.
      await pause(Math.random() * 20 * 2 ** attempt);
    }
  }
}

/**
 * Cancelled for a concurrent transaction on one of its items, and for nothing else; or an SDK retry
 * that overlapped its own first attempt (TransactionInProgressException), which is sent anew.
 */
function isConflict(error: unknown): boolean {
  if (error instanceof TransactionCanceledException) {
    const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code);
    return codes.includes("TransactionConflict") && !codes.includes("ConditionalCheckFailed");
  }
  return (error as Error).name === "TransactionInProgressException";
}
