import ky, { HTTPError, type KyInstance } from "ky";
import { monotonicFactory } from "ulid";
import { type SigV4Options, sigV4Signer } from "./sigv4.js";
import type {
  BatchResponseBody,
  CreateScheduleInput,
  EventBody,
  EventPageBody,
  HealthBody,
  HoldInput,
  LeaseBody,
  LeaseGrantBody,
  LedgerPageBody,
  LimitsInput,
  PatchScheduleInput,
  ProblemBody,
  ReconcileBody,
  RescheduleInput,
  ReservationBody,
  ScheduleBody,
  ScheduledEventBody,
  ScheduleInput,
  StatsBody,
  StockBody,
  TypeLimitsBody,
} from "./types.js";

export type * from "./types.js";

/** A type's limits and their version as the ETag to send back as `ifMatch`. */
export interface VersionedLimits {
  readonly limits: TypeLimitsBody;
  readonly etag: string;
}
export interface SchedulePageBody {
  readonly schedules: ScheduleBody[];
  readonly cursor?: string;
}
export interface OccurrenceBody {
  /** UTC. */
  readonly at: string;
  /** The same instant in the schedule's zone, with its offset. */
  readonly local: string;
}
export interface ScheduleStatsBody {
  readonly schedules: { active: number; paused: number; ended: number };
  readonly occurrences: number;
  readonly skipped: number;
  readonly missed: number;
}
export type ScheduleListQuery = {
  readonly type?: string;
  readonly state?: "active" | "paused" | "ended";
  readonly limit?: number;
  readonly cursor?: string;
};

export interface ClientOptions {
  /** Where the API is, such as `http://127.0.0.1:3000` or the API Gateway stage URL. */
  readonly url: string;
  /** A bearer token (local mode with HOURGLASS_API_TOKENS). */
  readonly token?: string;
  /** Sign every request with SigV4 (API Gateway IAM authorization). */
  readonly sigv4?: boolean | SigV4Options;
  /** Retries on 408, 429 and 5xx, with exponential backoff and jitter. @default 3 */
  readonly retries?: number;
  /** @default 30000 */
  readonly timeoutMs?: number;
}

/** The API answered with a problem document. */
export class HourglassApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: ProblemBody,
  ) {
    super(`${status} ${problem.title}${problem.detail ? `: ${problem.detail}` : ""}`);
    this.name = "HourglassApiError";
  }
}

export type ListQuery = {
  readonly status?: string;
  readonly type?: string;
  /** Only this recurring schedule's occurrences. */
  readonly scheduleId?: string;
  readonly limit?: number;
  readonly cursor?: string;
};

/**
 * A typed client for every route of the Hourglass API. Scheduling without an id gets one from the
 * client, so a retried request can never create the event twice.
 */
export class HourglassClient {
  private readonly http: KyInstance;
  /** ULIDs: sortable by creation, so the ids a client picks list in the order it sent them. */
  private readonly newId = monotonicFactory();

  constructor(options: ClientOptions) {
    const sign = options.sigv4 ? sigV4Signer(options.sigv4 === true ? {} : options.sigv4) : undefined;
    this.http = ky.create({
      prefixUrl: options.url.replace(/\/+$/, ""),
      timeout: options.timeoutMs ?? 30_000,
      retry: {
        limit: options.retries ?? 3,
        methods: ["get", "post", "patch", "delete"],
        statusCodes: [408, 429, 500, 502, 503, 504],
        backoffLimit: 10_000,
        jitter: true,
      },
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
      hooks: {
        beforeRequest: sign ? [(request) => sign(request)] : [],
      },
    });
  }

  schedule(input: ScheduleInput): Promise<ScheduledEventBody> {
    return this.call("post", "v1/events", { ...input, id: input.id ?? this.newId() });
  }

  /** Up to 500 events; each item gets its own result. */
  scheduleBatch(events: readonly ScheduleInput[]): Promise<BatchResponseBody> {
    return this.call("post", "v1/events/batch", {
      events: events.map((e) => ({ ...e, id: e.id ?? this.newId() })),
    });
  }

  get(id: string): Promise<EventBody> {
    return this.call("get", `v1/events/${encodeURIComponent(id)}`);
  }

  reschedule(id: string, input: RescheduleInput): Promise<EventBody> {
    return this.call("patch", `v1/events/${encodeURIComponent(id)}`, input);
  }

  cancel(id: string): Promise<EventBody> {
    return this.call("delete", `v1/events/${encodeURIComponent(id)}`);
  }

  list(query: ListQuery = {}): Promise<EventPageBody> {
    return this.call("get", "v1/events", undefined, query);
  }

  /** Every event matching the query, page after page. */
  listAll(query: Omit<ListQuery, "cursor"> = {}): AsyncIterable<EventBody> {
    return this.pages((cursor) => this.list({ ...query, cursor }));
  }

  stats(): Promise<StatsBody> {
    return this.call("get", "v1/stats");
  }

  deadLetters(query: Pick<ListQuery, "limit" | "cursor"> = {}): Promise<EventPageBody> {
    return this.call("get", "v1/dead-letters", undefined, query);
  }

  deadLettersAll(query: Pick<ListQuery, "limit"> = {}): AsyncIterable<EventBody> {
    return this.pages((cursor) => this.deadLetters({ ...query, cursor }));
  }

  replay(id: string): Promise<EventBody> {
    return this.call("post", `v1/dead-letters/${encodeURIComponent(id)}/replay`);
  }

  receiveStock(sku: string, input: { quantity: number; id?: string }): Promise<StockBody> {
    return this.call("post", `v1/stock/${encodeURIComponent(sku)}/receipts`, input);
  }

  stock(sku: string): Promise<StockBody> {
    return this.call("get", `v1/stock/${encodeURIComponent(sku)}`);
  }

  ledger(sku: string, query: Pick<ListQuery, "limit" | "cursor"> = {}): Promise<LedgerPageBody> {
    return this.call("get", `v1/stock/${encodeURIComponent(sku)}/ledger`, undefined, query);
  }

  reconcile(sku: string): Promise<ReconcileBody> {
    return this.call("get", `v1/stock/${encodeURIComponent(sku)}/reconcile`);
  }

  /** Holds every item or none; without an id the client picks one, so a retry is a repeat. */
  hold(input: HoldInput): Promise<ReservationBody> {
    return this.call("post", "v1/reservations", { ...input, id: input.id ?? this.newId() });
  }

  confirm(id: string): Promise<ReservationBody> {
    return this.call("post", `v1/reservations/${encodeURIComponent(id)}/confirm`);
  }

  cancelHold(id: string): Promise<ReservationBody> {
    return this.call("post", `v1/reservations/${encodeURIComponent(id)}/cancel`);
  }

  reservation(id: string): Promise<ReservationBody> {
    return this.call("get", `v1/reservations/${encodeURIComponent(id)}`);
  }

  acquireLease(name: string, input: { owner: string; ttlSeconds: number }): Promise<LeaseGrantBody> {
    return this.call("post", `v1/leases/${encodeURIComponent(name)}/acquire`, input);
  }

  renewLease(
    name: string,
    input: { owner: string; token: number; ttlSeconds?: number },
  ): Promise<LeaseGrantBody> {
    return this.call("post", `v1/leases/${encodeURIComponent(name)}/renew`, input);
  }

  releaseLease(name: string, input: { owner: string; token: number }): Promise<LeaseBody> {
    return this.call("post", `v1/leases/${encodeURIComponent(name)}/release`, input);
  }

  lease(name: string): Promise<LeaseBody> {
    return this.call("get", `v1/leases/${encodeURIComponent(name)}`);
  }

  /** Without an id the client picks one, so a retried create is a repeat, not a second schedule. */
  createSchedule(input: CreateScheduleInput): Promise<ScheduleBody> {
    return this.call("post", "v1/schedules", { ...input, id: input.id ?? this.newId() });
  }

  getSchedule(id: string): Promise<ScheduleBody> {
    return this.call("get", `v1/schedules/${encodeURIComponent(id)}`);
  }

  listSchedules(query: ScheduleListQuery = {}): Promise<SchedulePageBody> {
    return this.call("get", "v1/schedules", undefined, query);
  }

  /** Every schedule matching the query, page after page: `for await (const s of client.listAllSchedules())`. */
  async *listAllSchedules(query: Omit<ScheduleListQuery, "cursor"> = {}): AsyncIterable<ScheduleBody> {
    let cursor: string | undefined;
    do {
      const page = await this.listSchedules({ ...query, cursor });
      yield* page.schedules;
      cursor = page.cursor;
    } while (cursor);
  }

  updateSchedule(id: string, input: PatchScheduleInput): Promise<ScheduleBody> {
    return this.call("patch", `v1/schedules/${encodeURIComponent(id)}`, input);
  }

  deleteSchedule(id: string): Promise<ScheduleBody> {
    return this.call("delete", `v1/schedules/${encodeURIComponent(id)}`);
  }

  pauseSchedule(id: string): Promise<ScheduleBody> {
    return this.call("post", `v1/schedules/${encodeURIComponent(id)}/pause`);
  }

  resumeSchedule(id: string): Promise<ScheduleBody> {
    return this.call("post", `v1/schedules/${encodeURIComponent(id)}/resume`);
  }

  async nextOccurrences(id: string, count = 10): Promise<OccurrenceBody[]> {
    const body = await this.call<{ occurrences: OccurrenceBody[] }>(
      "get",
      `v1/schedules/${encodeURIComponent(id)}/next`,
      undefined,
      { count },
    );
    return body.occurrences;
  }

  scheduleStats(): Promise<ScheduleStatsBody> {
    return this.call("get", "v1/stats/schedules");
  }

  /** A type's limits (yours), with the ETag of their version. */
  async typeLimits(type: string): Promise<VersionedLimits> {
    return this.versioned("get", type);
  }

  /**
   * Replaces a type's limits. With `ifMatch` (an ETag from `typeLimits`), a concurrent change
   * fails with HourglassApiError 412 instead of being overwritten.
   */
  async setTypeLimits(
    type: string,
    limits: LimitsInput,
    options: { ifMatch?: string } = {},
  ): Promise<VersionedLimits> {
    return this.versioned("put", type, limits, options.ifMatch);
  }

  /** Changes some of a type's limits, keeping the rest: read, change, write with If-Match, again on 412. */
  async updateTypeLimits(
    type: string,
    change: (current: LimitsInput) => LimitsInput,
  ): Promise<VersionedLimits> {
    for (let attempt = 1; ; attempt++) {
      const { limits, etag } = await this.typeLimits(type);
      const { type: _type, version: _version, updatedAt: _updatedAt, ...current } = limits;
      try {
        return await this.setTypeLimits(type, change(current), { ifMatch: etag });
      } catch (error) {
        if (!(error instanceof HourglassApiError && error.status === 412) || attempt >= 5) throw error;
      }
    }
  }

  /** Stops starting events of a type; they stay scheduled (heldBy "paused") until `resumeType`. */
  pauseType(type: string): Promise<VersionedLimits> {
    return this.updateTypeLimits(type, (current) => ({ ...current, paused: true }));
  }

  /** Lets a paused type run again: the overdue events run in due order. */
  resumeType(type: string): Promise<VersionedLimits> {
    return this.updateTypeLimits(type, (current) => ({ ...current, paused: false }));
  }

  health(): Promise<HealthBody> {
    return this.call("get", "health");
  }

  private async *pages(
    fetchPage: (cursor: string | undefined) => Promise<EventPageBody>,
  ): AsyncIterable<EventBody> {
    let cursor: string | undefined;
    do {
      const page = await fetchPage(cursor);
      yield* page.events;
      cursor = page.cursor;
    } while (cursor);
  }

  private async versioned(
    method: "get" | "put",
    type: string,
    json?: LimitsInput,
    ifMatch?: string,
  ): Promise<VersionedLimits> {
    try {
      const response = await this.http(`v1/types/${encodeURIComponent(type)}/limits`, {
        method,
        json,
        headers: ifMatch ? { "if-match": ifMatch } : {},
      });
      return { limits: await response.json<TypeLimitsBody>(), etag: response.headers.get("etag") ?? "" };
    } catch (error) {
      throw await apiError(error);
    }
  }

  private async call<T>(
    method: "get" | "post" | "patch" | "delete",
    path: string,
    json?: unknown,
    query?: Record<string, string | number | undefined>,
  ): Promise<T> {
    const searchParams = Object.fromEntries(
      Object.entries(query ?? {}).filter(
        (entry): entry is [string, string | number] => entry[1] !== undefined,
      ),
    );
    try {
      return await this.http(path, { method, json, searchParams }).json<T>();
    } catch (error) {
      throw await apiError(error);
    }
  }
}

/** An HTTP error with a problem document becomes HourglassApiError; anything else is returned as is. */
async function apiError(error: unknown): Promise<unknown> {
  if (!(error instanceof HTTPError)) return error;
  const problem = (await error.response.json().catch(() => ({
    type: "about:blank",
    title: error.response.statusText,
    status: error.response.status,
  }))) as ProblemBody;
  return new HourglassApiError(error.response.status, problem);
}
