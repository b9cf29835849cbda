import { ConditionalCheckFailedException, TransactionCanceledException } from "@aws-sdk/client-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";

/**
 * What a refused condition says. Only a failed condition is a domain answer (the item as it stood,
 * returned with ReturnValuesOnConditionCheckFailure: ALL_OLD); every other error is an
 * infrastructure failure and propagates as the SDK threw it.
 */

export type Item = Record<string, unknown>;

/** A write refused by its condition, with the item it found (undefined: there was none, or ALL_OLD was not asked). */
export interface Refusal<I extends object = Item> {
  readonly existing: I | undefined;
}

/**
 * Runs a conditional write; if DynamoDB refuses it, `refused` answers instead (return a value, or
 * throw the module's domain error). Any other failure is rethrown unchanged. `I` names the shape
 * the caller stores in that table: the item is as DynamoDB returned it, not validated.
 */
export async function onConditionFailed<T, R, I extends object = Item>(
  write: Promise<T>,
  refused: (existing: I | undefined) => R,
): Promise<T | R> {
  try {
    return await write;
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) {
      return refused(error.Item ? (unmarshall(error.Item) as I) : undefined);
    }
    throw error;
  }
}

/**
 * For a transaction cancelled by DynamoDB: per action, in request order, its refusal when its own
 * condition failed, else undefined. Undefined altogether for any other error. `I` names the shape
 * of the items the caller reads from the refusals (not validated).
 */
export function transactionRefusals<I extends object = Item>(
  error: unknown,
): readonly (Refusal<I> | undefined)[] | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  return (error.CancellationReasons ?? []).map((reason) =>
    reason.Code === "ConditionalCheckFailed"
      ? { existing: reason.Item ? (unmarshall(reason.Item) as I) : undefined }
      : undefined,
  );
}
