/** Every key of the ledger table: one partition-key prefix per kind of item. */
export const counterKey = (tenant: string, sku: string) => `stock#${tenant}#${sku}`;
export const ledgerKey = (tenant: string, sku: string) => `ledger#${tenant}#${sku}`;
export const snapshotKey = (tenant: string, sku: string) => `snapshot#${tenant}#${sku}`;
export const reservationKey = (tenant: string, id: string) => `reservation#${tenant}#${id}`;
export const receiptKey = (tenant: string, sku: string, id: string) => `receipt#${tenant}#${sku}#${id}`;
