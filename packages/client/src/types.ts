/**
 * The API's bodies as a client sends and reads them. The server's zod schemas are the source of
 * truth; `shared/client/contract.ts` fails the repository's type-check when these drift from them,
 * so the package can carry plain types instead of the server's schemas.
 */

/** A problem document (`application/problem+json`). */
export interface ProblemBody {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  /** Validation: which field is wrong and why. */
  readonly errors?: { path: string; message: string }[];
  readonly [extension: string]: unknown;
}

export interface BackoffInput {
  readonly strategy?: "exponential" | "fixed";
  readonly delayMs: number;
  readonly maxDelayMs?: number;
}

/** URLs called once with the event's outcome, signed like webhooks. */
export interface CallbacksInput {
  readonly onSuccess?: string;
  readonly onFailure?: string;
}

/** When: `runAt` (ISO-8601 with Z or an offset) or `delaySeconds`, exactly one. */
export interface RescheduleInput {
  readonly runAt?: string;
  readonly delaySeconds?: number;
}

export interface ScheduleInput extends RescheduleInput {
  /** Your idempotency key; the client picks one when it is left out. */
  readonly id?: string;
  readonly type: string;
  readonly payload?: unknown;
  readonly maxAttempts?: number;
  readonly backoff?: BackoffInput;
  readonly callbacks?: CallbacksInput;
}

export interface EventBody {
  id: string;
  type: string;
  status: string;
  runAt: string;
  attempts: number;
  maxAttempts: number;
  payload: unknown;
  createdAt: string;
  updatedAt: string;
  lastError?: string;
  /** Why flow control holds it back. */
  heldBy?: "paused" | "rate" | "concurrency";
  scheduleId?: string;
  occurrenceAt?: string;
}

export interface ScheduledEventBody extends EventBody {
  /** Its runAt had passed when it was accepted: it runs at the dispatcher's next look. */
  overdue?: boolean;
}

export interface EventPageBody {
  events: EventBody[];
  cursor?: string;
}

export interface BatchResponseBody {
  results: { index: number; status: number; event?: ScheduledEventBody; error?: ProblemBody }[];
}

export interface StatsBody {
  byStatus: Record<string, number>;
  byType: Record<string, Record<string, number>>;
  oldestOverdueMs: number;
  indexSize: number;
  heldBy: Record<string, number>;
  heldByType: Record<string, Record<string, number>>;
  farPending: number;
  farTruncated: boolean;
}

export interface HealthBody {
  status: "ok" | "degraded";
  checks?: Record<string, { ok: boolean; latencyMs: number }>;
}

export interface StockCounts {
  onHand: number;
  held: number;
  sold: number;
  available: number;
}

export interface StockBody extends StockCounts {
  sku: string;
}

export interface LedgerPageBody {
  entries: {
    id: string;
    kind: "STOCK_IN" | "HOLD" | "CONFIRM" | "RELEASE";
    quantity: number;
    at: string;
    seq?: number;
    reservationId?: string;
  }[];
  cursor?: string;
}

export interface ReconcileBody {
  sku: string;
  counters: StockBody;
  ledger: StockBody;
  drift: StockCounts;
  ok: boolean;
  entriesRead: number;
  snapshotUpTo?: string;
}

export interface HoldInput {
  readonly id?: string;
  readonly items: { sku: string; quantity: number }[];
  readonly holdSeconds: number;
}

export interface ReservationBody {
  id: string;
  status: "held" | "confirmed" | "cancelled" | "expired";
  items: { sku: string; quantity: number }[];
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
}

export interface LeaseGrantBody {
  name: string;
  owner: string;
  token: number;
  expiresAt: string;
  /** True when this owner already held the lease: the same token, expiry moved to now + ttlSeconds. */
  alreadyHeld?: boolean;
}

export interface LeaseBody {
  name: string;
  held: boolean;
  token: number;
  owner?: string;
  expiresAt?: string;
}

export interface EventTemplateInput {
  readonly type: string;
  readonly payload?: unknown;
  readonly maxAttempts?: number;
  readonly backoff?: BackoffInput;
  readonly callbacks?: CallbacksInput;
}

interface ScheduleFields {
  readonly cron?: string;
  readonly rate?: string;
  readonly timezone?: string;
  readonly overlap?: "allow" | "skip";
  readonly jitterSeconds?: number;
  readonly catchUp?: "latest" | "all" | "none";
}

export interface CreateScheduleInput extends ScheduleFields {
  readonly id?: string;
  readonly startAt?: string;
  readonly endAt?: string;
  readonly event: EventTemplateInput;
  readonly paused?: boolean;
}

/** Only the fields given change; `null` clears startAt or endAt. */
export interface PatchScheduleInput extends ScheduleFields {
  readonly startAt?: string | null;
  readonly endAt?: string | null;
  readonly event?: EventTemplateInput;
}

export interface ScheduleBody {
  id: string;
  cron?: string;
  rate?: string;
  timezone: string;
  startAt?: string;
  endAt?: string;
  event: { type: string; payload: unknown; maxAttempts?: number; backoff?: unknown };
  overlap: "allow" | "skip";
  jitterSeconds: number;
  catchUp: "latest" | "all" | "none";
  state: "active" | "paused" | "ended";
  revision: number;
  occurrences: number;
  skipped: number;
  missed: number;
  nextAt?: string;
  lastOccurrenceAt?: string;
  createdAt: string;
  updatedAt: string;
}

export interface LimitsInput {
  readonly paused?: boolean;
  readonly ratePerSecond?: number;
  readonly burst?: number;
  readonly maxConcurrency?: number;
}

export interface TypeLimitsBody {
  type: string;
  paused: boolean;
  version: number;
  ratePerSecond?: number;
  burst?: number;
  maxConcurrency?: number;
  updatedAt?: string;
}
