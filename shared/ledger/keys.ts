/** Every key of the ledger table: one partition-key prefix per kind of item. */
export const counterKey = (tenant: string, sku: string) => `stock#${tenant}#${sku}`;
export const ledgerKey = (tenant: string, sku: string) => `ledger#${tenant}#${sku}`;
export const snapshotKey = (tenant: string, sku: string) => `snapshot#${tenant}#${sku}`;
export const reservationKey = (tenant: string, id: string) => `reservation#${tenant}#${id}`;
export const receiptKey = (tenant: string, sku: string, id: string) => `receipt#${tenant}#${sku}#${id}`;

/**
 * A ledger entry's sort key: its number in its SKU's sequence, zero-padded to the digits of the
 * largest safe integer, so that the keys' order is the numbers' order. The lower-case prefix sorts
 * after every ULID (upper case and digits), the keys of the entries written before the sequence
 * existed: a SKU's older entries come first, then its numbered ones.
 */
const ENTRY_PREFIX = "seq#";
const ENTRY_DIGITS = String(Number.MAX_SAFE_INTEGER).length;

export const entryKey = (seq: number) => `${ENTRY_PREFIX}${String(seq).padStart(ENTRY_DIGITS, "0")}`;

/** The sequence number in an entry's sort key; undefined for an older entry's (a ULID). */
export function sequenceOf(sk: string): number | undefined {
  return sk.startsWith(ENTRY_PREFIX) ? Number(sk.slice(ENTRY_PREFIX.length)) : undefined;
}
