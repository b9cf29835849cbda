/**
 * The one definition of Hourglass's tables and queues. Local provisioning (`shared/local/provision`)
 * creates exactly these, and the CDK stacks build their resources from the same objects, so a
 * laptop and an AWS account cannot drift apart.
 */
export type AttributeType = "S" | "N";

export interface IndexDefinition {
  readonly name: string;
  readonly partitionKey: { readonly name: string; readonly type: AttributeType };
  readonly sortKey: { readonly name: string; readonly type: AttributeType };
  /** ALL copies every attribute; KEYS_ONLY keeps the index cheap to write. */
  readonly projection: "ALL" | "KEYS_ONLY";
}

export interface TableDefinition {
  readonly partitionKey: { readonly name: string; readonly type: AttributeType };
  readonly sortKey?: { readonly name: string; readonly type: AttributeType };
  readonly indexes: readonly IndexDefinition[];
  readonly ttlAttribute?: string;
}

export const EVENTS_TABLE: TableDefinition = {
  partitionKey: { name: "pk", type: "S" },
  indexes: [
    {
      // Sparse: only pending events (scheduled, retrying) carry pshard/pdue. Recovery queries it per
      // shard by due time instead of scanning the table. Keys only: every event writes it, while
      // only recovery reads it (and then fetches the items), so the cheap projection wins.
      name: "pending",
      partitionKey: { name: "pshard", type: "S" },
      sortKey: { name: "pdue", type: "N" },
      projection: "KEYS_ONLY",
    },
    {
      // Every event of a tenant in creation order, for listing. Keys only: its attributes never change.
      name: "byTenant",
      partitionKey: { name: "tenant", type: "S" },
      sortKey: { name: "ckey", type: "S" },
      projection: "KEYS_ONLY",
    },
    {
      // Sparse: dead letters of a tenant, by time of death.
      name: "dead",
      partitionKey: { name: "dtenant", type: "S" },
      sortKey: { name: "dkey", type: "S" },
      projection: "KEYS_ONLY",
    },
  ],
  ttlAttribute: "ttl",
};

export const LEASES_TABLE: TableDefinition = {
  partitionKey: { name: "pk", type: "S" },
  indexes: [],
  // Lease items never set it: deleting one would reset its fencing token. Other items may.
  ttlAttribute: "ttl",
};

/**
 * The reservation ledger: stock counters, append-only ledger entries, snapshots and reservations,
 * each kind under its own partition-key prefix. Nothing here expires by TTL: the ledger is the
 * history the counters are checked against.
 */
export const LEDGER_TABLE: TableDefinition = {
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  indexes: [],
};

/**
 * Recurring schedules: partition the tenant, sort key the schedule id (plus one counter item per
 * tenant). Nothing expires: a schedule lives until it is deleted.
 */
export const SCHEDULES_TABLE: TableDefinition = {
  partitionKey: { name: "pk", type: "S" },
  sortKey: { name: "sk", type: "S" },
  indexes: [
    {
      // Sparse: only active schedules with an occurrence left carry dshard/dnext. The dispatcher
      // queries it per shard for what is due within its horizon. ALL: it needs the whole schedule
      // to compute occurrences, and schedules are small and written about once per occurrence.
      name: "due",
      partitionKey: { name: "dshard", type: "S" },
      sortKey: { name: "dnext", type: "N" },
      projection: "ALL",
    },
  ],
};

export interface QueueDefinition {
  readonly visibilityTimeoutSeconds: number;
  readonly retentionSeconds: number;
  readonly dlq: {
    readonly suffix: string;
    readonly maxReceiveCount: number;
    readonly retentionSeconds: number;
  };
}

export const WORK_QUEUE: QueueDefinition = {
  // Six times the worker's timeout, as AWS advises for Lambda event sources.
  visibilityTimeoutSeconds: 360,
  retentionSeconds: 4 * 86_400,
  dlq: { suffix: "-dlq", maxReceiveCount: 5, retentionSeconds: 14 * 86_400 },
};
