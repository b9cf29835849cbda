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
 * Refusals `retryRefused` calls stale have their own budget: each one means another writer
 * committed in between (a sequence moved), so every round makes progress, and a writer among n
 * that read the same value may lose up to n - 1 of them. Bounded, so a bug in a caller's callback
 * cannot loop for ever.
 */
const STALE_RETRIES = 64;

export interface TransactOptions {
  /**
   * Asked when a condition refused the transaction: true sends it again, built anew, within
   * STALE_RETRIES (apart from the conflicts' budget). For a condition on a value the caller read
   * before the attempt (a sequence number), which a concurrent write has moved since: the
   * callback learns the new value from the refusal (`transactionRefusals`) and the next build
   * uses it. False (and the default): the refusal is the caller's answer.
   */
  readonly retryRefused?: (error: TransactionCanceledException) => boolean;
  /**
   * Called before a conflict's retry, to read again what the build takes (a conflict carries no
   * item, and the transaction it met has likely moved the value): without it the next attempt
   * would mostly be refused as stale.
   */
  readonly refresh?: () => Promise<void>;
}

/**
 * One transaction, retried when DynamoDB cancels it for a conflict with a concurrent one (or for a
 * refusal `retryRefused` says is stale). The items are built again for every attempt, so anything
 * taken at build time (a timestamp, a number learnt from the last refusal) is taken when the
 * attempt is sent, not when a first attempt was. Any other refused condition is never retried:
 * `transactionRefusals` reads it.
 */
export async function transact(
  doc: DynamoDBDocumentClient,
  build: () => TransactItems,
  options: TransactOptions = {},
): Promise<void> {
  let conflicts = 0;
  let stale = 0;
  for (;;) {
    try {
      await doc.send(new TransactWriteCommand({ TransactItems: build() }));
      return;
    } catch (error) {
      if (isConflict(error)) {
        if (conflicts >= CONFLICT_RETRIES) throw error;
        // Full jitter, so the transactions that conflicted do not meet again on the next attempt.
        await pause(Math.random() * 20 * 2 ** conflicts++);
        await options.refresh?.();
        continue;
      }
      const refusedStale =
        error instanceof TransactionCanceledException && options.retryRefused?.(error) === true;
      if (!refusedStale || stale >= STALE_RETRIES) throw error;
      // Someone committed: a short jitter, capped, spreads the writers that read the same value.
      await pause(Math.random() * Math.min(100, 5 * 2 ** Math.min(stale++, 5)));
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
