import type { EventSpec, HistoryWriter, Op, OpRecord } from "./history.ts";
import { type Plan, type PlannedEvent, type PlannedOp, SKUS } from "./plan.ts";
import type { TenantPlannedOp } from "./plan-tenants.ts";
import { isTenantOp, tenantOp } from "./tenant-ops.ts";
import { TENANTS, type TenantName, tenantOfId } from "./tenants.ts";

/**
 * The client load: replays a plan's operations against the HTTP API at their planned times and
 * records each with its request time and its answer, or why there was none. Nothing is retried:
 * a lost answer stays "unknown" in the history, which is what the checker must reason about.
 */
export class ChaosClient {
  private seq = 0;
  private readonly tokens = new Map<string, number>();
  /** Every event id sent, and the last status a GET saw for it. */
  readonly seen = new Map<string, string | undefined>();
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly api: string,
    private readonly receiverUrl: string,
    private readonly history: HistoryWriter,
    private readonly timeoutMs = 6_000,
  ) {}

  /** Runs the plan's operations at `startedAt + atMs` until `stopAt`; waits for the answers. */
  async run(plan: Plan, startedAt: number, stopAt: number, stopped: () => boolean): Promise<void> {
    for (const { atMs, op } of plan.ops) {
      if (stopped() || Date.now() >= stopAt) break;
      const wait = startedAt + atMs - Date.now();
      if (wait > 0) await new Promise((done) => setTimeout(done, wait));
      // Bounded, so a stalled API does not pile up thousands of requests on a 2-core machine.
      while (this.inFlight.size >= 64) await Promise.race(this.inFlight);
      const call = this.perform(op, startedAt).finally(() => this.inFlight.delete(call));
      this.inFlight.add(call);
    }
    await Promise.all(this.inFlight);
  }

  async perform(planned: PlannedOp, startedAt: number): Promise<OpRecord> {
    if (isTenantOp(planned)) {
      const own = tenantOp(planned, startedAt);
      if (planned.kind === "schedule-recreate") {
        // Two records in the history: the delete, then the create once the id is free.
        const deleted = await this.call({ type: "schedule-delete", id: planned.id }, own.tenant);
        if (deleted.status !== 200 && deleted.status !== 404) return deleted;
      }
      return this.call(own.op, own.tenant);
    }
    return this.call(this.toOp(planned, startedAt));
  }

  private spec(e: PlannedEvent, startedAt: number): EventSpec {
    return { id: `e-${e.n}`, version: e.version, runAt: startedAt + e.runAtMs, behaviour: e.behaviour };
  }

  private toOp(p: Exclude<PlannedOp, TenantPlannedOp>, startedAt: number): Op {
    switch (p.kind) {
      case "create":
        return { type: "create", event: this.spec(p.event, startedAt) };
      case "batch":
        return { type: "batch", events: p.events.map((e) => this.spec(e, startedAt)) };
      case "cancel":
      case "get":
      case "replay":
        return { type: p.kind, id: `e-${p.target}` };
      case "reschedule":
        return { type: "reschedule", id: `e-${p.target}`, runAt: startedAt + p.runAtMs };
      case "lease":
        return {
          type: "lease",
          action: p.action,
          name: p.name,
          owner: p.owner,
          token: p.action === "acquire" ? undefined : (this.tokens.get(`${p.name}/${p.owner}`) ?? 1),
          ttlSeconds: p.ttlSeconds,
        };
      case "receipt":
        return { type: "receipt", sku: p.sku, quantity: p.quantity };
      case "hold":
        return { type: "hold", id: `r-${p.reservation}`, items: p.items, holdSeconds: p.holdSeconds };
      case "confirm":
      case "unhold":
        return { type: p.kind, id: `r-${p.reservation}` };
    }
  }

  private event(spec: EventSpec) {
    this.seen.set(spec.id, this.seen.get(spec.id));
    return {
      id: spec.id,
      type: "webhook",
      runAt: new Date(spec.runAt).toISOString(),
      maxAttempts: 4,
      payload: this.payload(spec.id, spec.version, tenantOfId(spec.id), spec.behaviour),
    };
  }

  /** A webhook payload: the receiver reads who it is (k, v), whose secret signs it (t), and how to answer (b). */
  private payload(k: string, v: number, t: TenantName, b: EventSpec["behaviour"]) {
    return { url: this.receiverUrl, body: { k, v, t, b } };
  }

  private scheduleEvent(id: string, generation: number) {
    return { type: "webhook", maxAttempts: 4, payload: this.payload(id, generation, "main", {}) };
  }

  private request(op: Op): { method: string; path: string; body?: unknown } {
    switch (op.type) {
      case "create":
        return { method: "POST", path: "/v1/events", body: this.event(op.event) };
      case "batch":
        return {
          method: "POST",
          path: "/v1/events/batch",
          body: { events: op.events.map((e) => this.event(e)) },
        };
      case "cancel":
        return { method: "DELETE", path: `/v1/events/${op.id}` };
      case "reschedule":
        return {
          method: "PATCH",
          path: `/v1/events/${op.id}`,
          body: { runAt: new Date(op.runAt).toISOString() },
        };
      case "replay":
        return { method: "POST", path: `/v1/dead-letters/${op.id}/replay` };
      case "get":
        return { method: "GET", path: `/v1/events/${op.id}` };
      case "lease":
        return {
          method: "POST",
          path: `/v1/leases/${op.name}/${op.action}`,
          body:
            op.action === "acquire"
              ? { owner: op.owner, ttlSeconds: op.ttlSeconds }
              : op.action === "renew"
                ? { owner: op.owner, token: op.token, ttlSeconds: op.ttlSeconds }
                : { owner: op.owner, token: op.token },
        };
      case "receipt":
        return { method: "POST", path: `/v1/stock/${op.sku}/receipts`, body: { quantity: op.quantity } };
      case "hold":
        return {
          method: "POST",
          path: "/v1/reservations",
          body: { id: op.id, items: op.items, holdSeconds: op.holdSeconds },
        };
      case "confirm":
        return { method: "POST", path: `/v1/reservations/${op.id}/confirm` };
      case "unhold":
        return { method: "POST", path: `/v1/reservations/${op.id}/cancel` };
      case "reservation":
        return { method: "GET", path: `/v1/reservations/${op.id}` };
      case "stock":
        return { method: "GET", path: `/v1/stock/${op.sku}` };
      case "ledger":
        return { method: "GET", path: `/v1/stock/${op.sku}/ledger` };
      case "limits":
        return { method: "PUT", path: "/v1/types/webhook/limits", body: op.limits };
      case "schedule-create":
        return {
          method: "POST",
          path: "/v1/schedules",
          body: {
            id: op.id,
            rate: `${op.everySeconds} seconds`,
            startAt: new Date(op.startAt).toISOString(),
            endAt: new Date(op.endAt).toISOString(),
            // Every instant a late materializer finds passed still runs, so "every occurrence of a
            // live schedule runs" holds however slow the dispatchers are (checks/schedules.ts).
            catchUp: "all",
            event: this.scheduleEvent(op.id, op.generation),
          },
        };
      case "schedule-edit":
        return {
          method: "PATCH",
          path: `/v1/schedules/${op.id}`,
          body: { event: this.scheduleEvent(op.id, op.generation) },
        };
      case "schedule-delete":
        return { method: "DELETE", path: `/v1/schedules/${op.id}` };
      case "stats":
        return { method: "GET", path: "/v1/stats" };
      case "timeline":
        return { method: "GET", path: "/v1/timeline?horizon=hour" };
    }
  }

  /** `tenant` defaults to the one the event id names (the main tenant for everything else). */
  async call(op: Op, tenant: TenantName = "id" in op ? tenantOfId(op.id) : "main"): Promise<OpRecord> {
    const { method, path, body } = this.request(op);
    const seq = this.seq++;
    const sentAt = Date.now();
    let record: OpRecord;
    const headers: Record<string, string> = { authorization: `Bearer ${TENANTS[tenant].token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const who = tenant === "main" ? {} : { tenant: TENANTS[tenant].id };
    try {
      const response = await fetch(`${this.api}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // Kept as text: a proxy's or a crash's answer is still part of the story.
      }
      record = {
        kind: "op",
        seq,
        op,
        sentAt,
        recvAt: Date.now(),
        status: response.status,
        body: parsed,
        ...who,
      };
    } catch (error) {
      record = { kind: "op", seq, op, sentAt, recvAt: Date.now(), error: reason(error), ...who };
    }
    this.history.write(record);
    this.learn(record);
    return record;
  }

  /** Remembers lease tokens and event states, so later operations can use them. */
  private learn(record: OpRecord): void {
    const { op } = record;
    if (op.type === "lease" && record.status === 200 && op.action !== "release") {
      const token = (record.body as { token?: unknown } | undefined)?.token;
      if (typeof token === "number") this.tokens.set(`${op.name}/${op.owner}`, token);
    }
    if (op.type === "get" && record.status !== undefined && record.status < 500) {
      const status = (record.body as { status?: unknown } | undefined)?.status;
      this.seen.set(op.id, typeof status === "string" ? status : `http-${record.status}`);
    }
  }

  /**
   * Reads every event until each is final, or until `deadline`. Past the deadline it keeps
   * reading while events are still finishing (one did within `progressMs`), up to `hardDeadline`:
   * on an oversubscribed machine the recovery from the faults is slow but moving (seen: DynamoDB
   * Local back 33 s after its restart, at a load average of 25), and an event that is stuck stops
   * the wait at `deadline` exactly as before.
   */
  async settle(deadline: number, hardDeadline = deadline, progressMs = 15_000): Promise<void> {
    const final = new Set(["succeeded", "cancelled", "dead", "http-404"]);
    const openIds = () => [...this.seen].filter(([, status]) => !final.has(status ?? "")).map(([id]) => id);
    let open = openIds().length;
    let progressAt = Date.now();
    while (Date.now() < deadline || (Date.now() < hardDeadline && Date.now() - progressAt < progressMs)) {
      const ids = openIds();
      if (ids.length === 0) return;
      if (ids.length < open) progressAt = Date.now();
      open = ids.length;
      await this.each(ids, (id) => this.call({ type: "get", id }));
      await new Promise((done) => setTimeout(done, 1_000));
    }
  }

  /** The final reads the checker judges by: every event, every SKU's counters and whole ledger. */
  async finalReads(reservations: number): Promise<void> {
    await this.each([...this.seen.keys()], (id) => this.call({ type: "get", id }));
    for (const sku of SKUS) {
      await this.call({ type: "stock", sku });
      await this.ledger(sku);
    }
    await this.each(
      Array.from({ length: reservations }, (_, i) => `r-${i}`),
      (id) => this.call({ type: "reservation", id }),
    );
  }

  /** One history record holding every page of the SKU's ledger. */
  private async ledger(sku: string): Promise<void> {
    const sentAt = Date.now();
    const outcome = await this.ledgerPages(sku);
    this.history.write({
      kind: "op",
      seq: this.seq++,
      op: { type: "ledger", sku },
      sentAt,
      recvAt: Date.now(),
      ...outcome,
    });
  }

  /** Every page of the SKU's ledger, or which page could not be read. */
  private async ledgerPages(
    sku: string,
  ): Promise<{ status: 200; body: { entries: unknown[] } } | { error: string }> {
    const entries: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 1_000; page++) {
      const query = cursor ? `?cursor=${encodeURIComponent(cursor)}&limit=100` : "?limit=100";
      const response = await fetch(`${this.api}/v1/stock/${sku}/ledger${query}`, {
        headers: { authorization: `Bearer ${TENANTS.main.token}` },
        signal: AbortSignal.timeout(this.timeoutMs),
      }).catch(() => undefined);
      if (!response?.ok) return { error: `page ${page} failed` };
      const body = (await response.json()) as { entries: unknown[]; cursor?: string };
      entries.push(...body.entries);
      cursor = body.cursor;
      if (!cursor) break;
    }
    return { status: 200, body: { entries } };
  }

  private async each(
    ids: readonly string[],
    fn: (id: string) => Promise<unknown>,
    width = 16,
  ): Promise<void> {
    let next = 0;
    await Promise.all(
      Array.from({ length: width }, async () => {
        while (next < ids.length) await fn(ids[next++]!);
      }),
    );
  }
}

/** "refused" means the request never reached a server; anything else may have been acted on. */
function reason(error: unknown): string {
  const e = error as { name?: string; cause?: { code?: string; name?: string } };
  if (e?.name === "TimeoutError" || e?.cause?.name === "TimeoutError") return "timeout";
  if (e?.cause?.code === "ECONNREFUSED") return "refused";
  return e?.cause?.code ?? e?.name ?? String(error);
}
