import { appendFileSync, readFileSync } from "node:fs";

/**
 * The soak's history: every client operation with its request time and its answer (or "unknown"),
 * every webhook the receiver saw, every fault injected. One JSON object per line, appended as it
 * happens, so a crashed soak still leaves what it saw. The checker reads nothing else.
 */

/** What the receiver was asked to do with an event's deliveries (carried in the webhook body). */
export interface Behaviour {
  /** Answer 503 to attempts 1..fail. */
  readonly fail?: number;
  /** Hold this attempt past the webhook timeout, then answer too late. */
  readonly hang?: number;
  /** Answer 2xx after this long (less than the timeout). */
  readonly slowMs?: number;
  /** Answer 410 to every attempt: the event goes to the dead letters at once. */
  readonly gone?: boolean;
}

export interface EventSpec {
  readonly id: string;
  /** Body version: 1 is the first body sent for the id; 2 is a different body under the same id. */
  readonly version: number;
  /** Epoch ms. */
  readonly runAt: number;
  readonly behaviour: Behaviour;
}

export type Op =
  | { readonly type: "create"; readonly event: EventSpec }
  | { readonly type: "batch"; readonly events: readonly EventSpec[] }
  | { readonly type: "cancel"; readonly id: string }
  | { readonly type: "reschedule"; readonly id: string; readonly runAt: number }
  | { readonly type: "replay"; readonly id: string }
  | { readonly type: "get"; readonly id: string }
  | {
      readonly type: "lease";
      readonly action: "acquire" | "renew" | "release";
      readonly name: string;
      readonly owner: string;
      readonly token?: number;
      readonly ttlSeconds?: number;
    }
  | { readonly type: "receipt"; readonly sku: string; readonly quantity: number }
  | {
      readonly type: "hold";
      readonly id: string;
      readonly items: readonly { sku: string; quantity: number }[];
      readonly holdSeconds: number;
    }
  | { readonly type: "confirm" | "unhold"; readonly id: string }
  | { readonly type: "reservation"; readonly id: string }
  | { readonly type: "stock"; readonly sku: string }
  | { readonly type: "ledger"; readonly sku: string }
  | TenantOp;

/**
 * Operations of the other tenants and the schedules (see plan-tenants.ts). A schedule's occurrences
 * carry `{ k: scheduleId, v: generation }` in their webhook body; a generation is one body a
 * create or an edit gave it, so a delivery says which incarnation of the id it came from.
 */
export type TenantOp =
  | { readonly type: "limits"; readonly limits: LimitsBody }
  | {
      readonly type: "schedule-create";
      readonly id: string;
      readonly generation: number;
      readonly startAt: number;
      readonly endAt: number;
      readonly everySeconds: number;
    }
  | { readonly type: "schedule-edit"; readonly id: string; readonly generation: number }
  | { readonly type: "schedule-delete"; readonly id: string }
  | { readonly type: "stats" }
  | { readonly type: "timeline" };

/** A `PUT /v1/types/webhook/limits` body: the whole set of limits ({} clears them). */
export interface LimitsBody {
  readonly paused?: boolean;
  readonly ratePerSecond?: number;
  readonly burst?: number;
}

/** A client operation. `status` is the HTTP status; without one the answer was lost. */
export interface OpRecord {
  readonly kind: "op";
  readonly seq: number;
  readonly op: Op;
  readonly sentAt: number;
  readonly recvAt: number;
  readonly status?: number;
  readonly body?: unknown;
  /** Why there is no answer: a timeout, a reset connection… ("refused" means it never arrived). */
  readonly error?: string;
  /** The caller's tenant; absent for the main tenant (every record before tenants existed). */
  readonly tenant?: string;
}

/** A webhook delivery as the receiver saw it, by the receiver's clock. */
export interface ArrivalRecord {
  readonly kind: "arrival";
  readonly id: string;
  readonly attempt: number;
  readonly at: number;
  readonly version: number;
  readonly signatureOk: boolean;
  /** What the receiver answered (0: it held the request and never answered in time). */
  readonly answer: number;
  /** When the answer was sent. */
  readonly answeredAt?: number;
}

export interface FaultRecord {
  readonly kind: "fault";
  readonly fault: FaultKind;
  readonly at: number;
  readonly endAt: number;
  readonly detail?: string;
}

export type FaultKind =
  | "kill-api"
  | "kill-dispatcher"
  | "kill-worker"
  | "redis-stop"
  | "redis-flushall"
  | "sqs-restart"
  | "dynamodb-restart"
  | "worker-skew"
  | "api-skew"
  | "dispatcher-skew";

export interface MetaRecord {
  readonly kind: "meta";
  readonly seed: number;
  readonly profile: string;
  readonly startedAt: number;
  /** Time after expiresAt by which an unconfirmed hold must have been released. */
  readonly holdGraceMs: number;
  /** Every unknown or accepted event is due by this time; later ones are not judged for "never ran". */
  readonly loadEndsAt: number;
  /** The bounds the tenant, schedule and journal rules judge by (absent in older histories). */
  readonly bounds?: Bounds;
}

/**
 * What the soak's settings imply, written into the history so the checker stays pure. See
 * checks/fairness.ts for how each is used.
 */
export interface Bounds {
  /** The noisy tenant starts here (epoch ms); the quiet tenant's lateness before it is the baseline. */
  readonly noisyFrom: number;
  /** The dispatcher's period. */
  readonly tickMs: number;
  /** How long after a fault ends lateness is still the fault's (leases expire, the sweep comes by). */
  readonly recoveryMs: number;
  /** Events are claimed this long before they are due: a fault this early can still delay one. */
  readonly lookAheadMs: number;
}

/** Every journal item, read straight from DynamoDB after the final reads. */
export interface JournalRecord {
  readonly kind: "journal";
  readonly at: number;
  readonly items: readonly JournalEntry[];
  /** Set when the scan failed: the journal rules then judge nothing. */
  readonly error?: string;
}

export interface JournalEntry {
  readonly tenant: string;
  readonly id: string;
  readonly status: string;
  readonly runAt: number;
  readonly updatedAt: number;
}

export interface PhaseRecord {
  readonly kind: "phase";
  readonly phase: "load" | "quiet" | "final" | "end";
  readonly at: number;
}

/** A Hourglass process that died without being killed by the soak (startup failure, crash). */
export interface ExitRecord {
  readonly kind: "exit";
  readonly process: string;
  readonly at: number;
  readonly code: number | null;
  readonly signal: string | null;
  readonly expected: boolean;
}

export type HistoryRecord =
  | OpRecord
  | ArrivalRecord
  | FaultRecord
  | MetaRecord
  | PhaseRecord
  | ExitRecord
  | JournalRecord;

export class HistoryWriter {
  private readonly records: HistoryRecord[] = [];
  constructor(private readonly file: string | undefined) {}

  write(record: HistoryRecord): void {
    this.records.push(record);
    if (this.file) appendFileSync(this.file, `${JSON.stringify(record)}\n`);
  }

  all(): readonly HistoryRecord[] {
    return this.records;
  }
}

export function readHistory(file: string): HistoryRecord[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as HistoryRecord);
}
