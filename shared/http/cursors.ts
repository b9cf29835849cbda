import { InvalidCursorError } from "../journal/errors.ts";
import { journalKey } from "../journal/item.ts";
import { ledgerKey } from "../ledger/keys.ts";

/** DynamoDB refuses key values over 1,024 bytes (sort keys); no position this API hands out is longer. */
const MAX_KEY_BYTES = 1_024;

type KeyRules = Readonly<Record<string, (value: string) => boolean>>;

/**
 * Checks that a client's cursor is a position this API could have handed to this caller, for this
 * list, before it reaches DynamoDB. A cursor is DynamoDB's LastEvaluatedKey, encoded; any other
 * object (another shape, another tenant's position, numbers or maps where strings belong) made
 * DynamoDB answer ValidationException, which surfaced as a 503 for what is the client's mistake.
 */
function checkCursor(cursor: string | undefined, rules: KeyRules): void {
  if (cursor === undefined || cursor === "") return;
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new InvalidCursorError(cursor);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new InvalidCursorError(cursor);
  const entries = Object.entries(value);
  const valid =
    entries.length === Object.keys(rules).length &&
    entries.every(([name, v]) => {
      const rule = Object.hasOwn(rules, name) ? rules[name] : undefined;
      return (
        rule !== undefined &&
        typeof v === "string" &&
        v.length > 0 &&
        Buffer.byteLength(v, "utf8") <= MAX_KEY_BYTES &&
        rule(v)
      );
    });
  if (!valid) throw new InvalidCursorError(cursor);
}

const any = () => true;

/** A cursor of a tenant's event list: a position in the `byTenant` index, or in `dead` for dead letters. */
export function checkEventCursor(tenant: string, cursor: string | undefined, dead: boolean): void {
  const ownEvent = (pk: string) => pk.startsWith(journalKey(tenant, ""));
  const ownTenant = (t: string) => t === tenant;
  checkCursor(
    cursor,
    dead ? { pk: ownEvent, dtenant: ownTenant, dkey: any } : { pk: ownEvent, tenant: ownTenant, ckey: any },
  );
}

/** A cursor of a SKU's ledger: a position among that SKU's entries. */
export function checkLedgerCursor(tenant: string, sku: string, cursor: string | undefined): void {
  checkCursor(cursor, { pk: (pk) => pk === ledgerKey(tenant, sku), sk: any });
}

/** A cursor of a tenant's schedule list: a position among that tenant's schedules (keyed by tenant and id). */
export function checkScheduleCursor(tenant: string, cursor: string | undefined): void {
  checkCursor(cursor, { pk: (pk) => pk === tenant, sk: any });
}
