import type { HourglassConfig } from "../config.ts";
import { limitKeys } from "../engine/keys.ts";
import type { GroupAllowance } from "../engine/redis-index.ts";
import { type RedisClient, runScript } from "../engine/scripts.ts";
import { JournalRequiredError } from "../journal/errors.ts";
import { TenantRateLimitedError } from "./errors.ts";
import {
  groupOf,
  type HeldBy,
  isLimited,
  type LimitsInput,
  parseGroup,
  type StoredLimits,
  type TypeLimits,
} from "./model.ts";
import type { LimitsStore } from "./store.ts";

/** An event asking to start: who it belongs to, for admission. */
export interface AdmitRequest {
  readonly tenant: string;
  readonly type: string;
  readonly member: string;
}

export type Admission =
  | { readonly admitted: true }
  | { readonly admitted: false; readonly reason: HeldBy; readonly retryAfterMs: number };

/**
 * Flow control (docs/flow-control.md): per-type limits of a tenant (paused, rate, concurrency) and
 * the deployment's per-tenant caps (creates per second, running at once).
 *
 * - The limits' durable record is DynamoDB (`LimitsStore`); every write is mirrored into Redis at
 *   once, and the dispatcher mirrors the whole list again at least once a tick (at most every
 *   `refreshMs`), so a lost Redis or a crashed API between the two writes heals within a tick.
 * - Admission (`admit`) is one Lua call per tenant (admit.lua): tokens and slots are taken
 *   atomically, so any number of workers together never exceed a limit.
 * - The dispatcher asks `allowances` once a tick for how many events of each limited group may be
 *   claimed; the rest are parked in the index (claim.lua), not sent.
 */
export class FlowControl {
  private cached: { limits: StoredLimits[]; until: number } | undefined;
  private refreshing: Promise<StoredLimits[]> | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly config: HourglassConfig,
    /** Absent in the engine-only mode: type limits need DynamoDB; the tenant caps still apply. */
    private readonly store: LimitsStore | undefined,
    private readonly clock: () => number,
  ) {}

  /**
   * Whether admission can ever hold an event back: type limits live in the store (DynamoDB, so
   * not in the engine-only mode) and the tenant cap is a setting. Without either, a worker skips
   * admit and free: they would take and give back slots nothing counts, two Redis calls a batch
   * on every event's way to its handler.
   */
  get admits(): boolean {
    return this.store !== undefined || this.config.tenantLimits.maxRunning > 0;
  }

  /** How stale the dispatcher's copy of the limits may get: a tick, and never more than a second. */
  get refreshMs(): number {
    return Math.min(this.config.tickMs, 1_000);
  }

  async get(tenant: string, type: string): Promise<StoredLimits> {
    return this.requireStore().get(tenant, type);
  }

  /**
   * Replaces a type's limits. `expectedVersion` (from `If-Match`) makes the write conditional: a
   * stale one is refused with LimitsVersionMismatchError and changes nothing.
   */
  async put(
    tenant: string,
    type: string,
    input: LimitsInput,
    expectedVersion?: number,
  ): Promise<StoredLimits> {
    const limits: TypeLimits = {
      paused: input.paused ?? false,
      ratePerSecond: input.ratePerSecond,
      burst: input.burst,
      maxConcurrency: input.maxConcurrency,
    };
    const stored = await this.requireStore().put(tenant, type, limits, this.clock(), expectedVersion);
    await this.mirror(stored);
    this.cached = undefined;
    return stored;
  }

  /**
   * Which of a tenant's types are paused now, from the Redis mirror (what admission reads). An
   * event parked for its rate or slots before its type was paused is then reported as paused.
   */
  async pausedTypes(tenant: string, types: readonly string[]): Promise<Set<string>> {
    const keys = limitKeys(this.config.keyPrefix, tenant);
    const flags = await Promise.all(types.map((type) => this.client.hget(keys.cfg(type), "paused")));
    return new Set(types.filter((_, i) => flags[i] === "1"));
  }

  /** Takes `n` creates from the tenant's bucket, or throws TenantRateLimitedError (HTTP 429). */
  async takeCreates(tenant: string, n: number): Promise<void> {
    const { createsPerSecond, createsBurst } = this.config.tenantLimits;
    if (createsPerSecond === 0 || n === 0) return;
    const keys = limitKeys(this.config.keyPrefix, tenant);
    const reply = (await runScript(this.client, "take", { creates: keys.creates }, [
      createsPerSecond,
      createsBurst,
      n,
    ])) as [1] | [0, number];
    if (reply[0] === 0) throw new TenantRateLimitedError(tenant, Number(reply[1]), createsPerSecond);
  }

  /** Decides which events may start now; one atomic call per tenant. Results in input order. */
  async admit(requests: readonly AdmitRequest[]): Promise<Admission[]> {
    const results: Admission[] = new Array(requests.length);
    const leaseMs = this.config.handlerTimeoutMs + this.config.runLeaseMarginMs;
    await Promise.all(
      [...byTenant(requests)].map(async ([tenant, indexes]) => {
        const args: (string | number)[] = [leaseMs, this.config.tenantLimits.maxRunning];
        for (const i of indexes) args.push(requests[i]!.type, requests[i]!.member);
        const keys = limitKeys(this.config.keyPrefix, tenant);
        const reply = (await runScript(this.client, "admit", { running: keys.running }, args)) as (
          | string
          | number
        )[];
        indexes.forEach((index, n) => {
          results[index] =
            Number(reply[n * 3]) === 0
              ? { admitted: true }
              : {
                  admitted: false,
                  reason: reply[n * 3 + 1] as HeldBy,
                  retryAfterMs: Number(reply[n * 3 + 2]),
                };
        });
      }),
    );
    return results;
  }

  /** Gives back the slots of events that finished (or never ran after all). */
  async free(requests: readonly AdmitRequest[]): Promise<void> {
    await Promise.all(
      [...byTenant(requests)].map(async ([tenant, indexes]) => {
        const args: string[] = [];
        for (const i of indexes) args.push(requests[i]!.type, requests[i]!.member);
        await runScript(this.client, "free", limitKeys(this.config.keyPrefix, tenant), args);
      }),
    );
  }

  /**
   * The dispatcher's allowances for this tick: every group with limits, and every group with
   * parked events (`parkedGroups`), with how many events it may take before the next tick. A group
   * no limit applies to is left out (claim.lua then releases it in full).
   */
  async allowances(parkedGroups: Iterable<string>): Promise<GroupAllowance[]> {
    const limits = await this.limits();
    const groups = new Set<string>(parkedGroups);
    for (const item of limits) if (isLimited(item)) groups.add(groupOf(item.tenant, item.type));
    const tenants = new Map<string, string[]>();
    for (const group of groups) {
      const { tenant, type } = parseGroup(group);
      const types = tenants.get(tenant);
      if (types) types.push(type);
      else tenants.set(tenant, [type]);
    }
    const out: GroupAllowance[] = [];
    await Promise.all(
      [...tenants].map(async ([tenant, types]) => {
        const reply = (await runScript(this.client, "peek", limitKeys(this.config.keyPrefix, tenant), [
          this.refreshMs,
          this.config.tenantLimits.maxRunning,
          ...types,
        ])) as (string | number)[];
        types.forEach((type, i) => {
          const allowance = Number(reply[i * 2]);
          if (allowance >= 0)
            out.push({ group: groupOf(tenant, type), allowance, reason: reply[i * 2 + 1] as HeldBy });
        });
      }),
    );
    return out;
  }

  /**
   * Every tenant's limits, read from DynamoDB at most every `refreshMs` and mirrored into Redis
   * each time they are read (versioned, so an older read never undoes a newer PUT).
   */
  async limits(): Promise<StoredLimits[]> {
    if (!this.store) return [];
    if (this.cached && this.clock() < this.cached.until) return this.cached.limits;
    this.refreshing ??= (async () => {
      try {
        const limits = await this.store!.list();
        await Promise.all(limits.map((item) => this.mirror(item)));
        this.cached = { limits, until: this.clock() + this.refreshMs };
        return limits;
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  private async mirror(item: StoredLimits): Promise<void> {
    const keys = limitKeys(this.config.keyPrefix, item.tenant);
    const text = (value: number | undefined) => (value === undefined ? "" : String(value));
    await runScript(this.client, "mirror", { config: keys.cfg(item.type) }, [
      item.version,
      item.paused ? "1" : "0",
      text(item.ratePerSecond),
      text(item.burst),
      text(item.maxConcurrency),
    ]);
  }

  private requireStore(): LimitsStore {
    if (!this.store) throw new JournalRequiredError("type limits");
    return this.store;
  }
}

function byTenant(requests: readonly AdmitRequest[]): Map<string, number[]> {
  const map = new Map<string, number[]>();
  requests.forEach((request, i) => {
    const list = map.get(request.tenant);
    if (list) list.push(i);
    else map.set(request.tenant, [i]);
  });
  return map;
}
