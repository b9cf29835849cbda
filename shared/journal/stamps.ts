import { type DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { and, type Condition, exists } from "../dynamo/conditions.ts";
import { type UpdateSpec, update } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import { JournalConditionError } from "./errors.ts";
import type { JournalItem } from "./item.ts";
import { stampedFrom } from "./updates.ts";

/**
 * Orders an item's stamps (`updatedAt`, and the `finishedAt`, `dkey` and `ttl` derived from it) by
 * the journal itself, whatever the writers' clocks say: each write is stamped no earlier than the
 * item's last stamp, and a death strictly after it. Two stamps of an item then compare as their
 * writes happened, so the index may compare a death with a replay (revive.lua) although a worker
 * stamped the one and the API the other (docs/reliability.md, issue 33 finding 4).
 *
 * A writer whose clock is behind the item's last stamp pays one more conditional write, stamped at
 * (or, for a death, just after) that stamp. Only the stamp moves: the times a write reports (a
 * retry's runAt) stay the writer's.
 */

/**
 * Writes tried before a refusal stands. A write is refused for its stamp only after another write
 * of the item committed a later one, so this covers seven writers of one item at once; an event
 * has one or two (its worker, a client's reschedule or cancel).
 */
const STAMP_ATTEMPTS = 8;

export interface StampedWrite {
  readonly table: string;
  /** For the refusal: the journal operation, as JournalConditionError names it. */
  readonly operation: string;
  readonly key: string;
  /** The write's own condition; the item must exist too. */
  readonly condition: Condition;
  /** The writer's clock. */
  readonly now: number;
  /** A death: stamped strictly after the item's last stamp, not merely no earlier. */
  readonly strict: boolean;
}

/**
 * Updates one item if `condition` holds, stamped at `now`, or when the item's last stamp is later,
 * at that stamp (+1 when strict); `change` builds the update for the stamp. Returns the item as
 * written. A refusal for the write's own condition throws JournalConditionError with the item.
 */
export async function stampedUpdate(
  doc: DynamoDBDocumentClient,
  write: StampedWrite,
  change: (at: number) => Omit<UpdateSpec, "if">,
): Promise<JournalItem> {
  const { table, operation, key, condition, strict } = write;
  let at = write.now;
  for (let attempt = 1; ; attempt++) {
    const request = doc.send(
      new UpdateCommand({
        TableName: table,
        Key: { pk: key },
        ...update({ ...change(at), if: and(exists("pk"), condition, stampedFrom(at, strict)) }),
        ReturnValues: "ALL_NEW",
        ReturnValuesOnConditionCheckFailure: "ALL_OLD",
      }),
    );
    const refused = await onConditionFailed(
      request.then(({ Attributes }) => ({ written: Attributes as JournalItem })),
      (existing: JournalItem | undefined) => ({ existing }),
    );
    if ("written" in refused) return refused.written;
    const last = refused.existing?.updatedAt;
    // Not the stamp (a stamp that old passes): the write's own condition refused it.
    const byStamp = last !== undefined && (strict ? last >= at : last > at);
    if (!byStamp || attempt >= STAMP_ATTEMPTS)
      throw new JournalConditionError(operation, key, refused.existing);
    at = strict ? last + 1 : last;
  }
}
