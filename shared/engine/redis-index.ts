import type { DispatchMessage } from "../model/message.ts";
import type { EventStatus, LiveStatus } from "../model/status.ts";
import { ScriptCode } from "./codes.ts";
import { IndexCorruptError } from "./errors.ts";
import { dueCountKey, heldKeys, parseMember, type ShardKeys, shardKeys, shardOf } from "./keys.ts";
import { type RedisClient, runScript } from "./scripts.ts";

export interface IndexEntry {
  readonly member: string;
  readonly runAt: number;
  readonly body: string;
}

export interface RestoreEntry extends IndexEntry {
  readonly attempt: number;
  readonly status: "scheduled" | "retrying" | "dead";
  /** The journal item's version (see reschedule.lua); 0 when it has none. */
  readonly version: number;
}

/** How long a cancel's tombstone keeps restores away: far longer than any journal read takes to apply. */
export const TOMBSTONE_MS = 15 * 60_000;

export type ClaimResult =
  | { readonly epochMissing: true }
  | {
      readonly epochMissing: false;
      readonly claimed: (DispatchMessage & { redelivered: boolean })[];
      /** Members whose entry could not be read, set aside by this claim (each reported once). */
      readonly quarantined: string[];
      /** Events held back by flow control (parked) by this claim. */
      readonly parked: number;
      /** Per listed group (`tenant|type`), how many events it took. */
      readonly taken: Map<string, number>;
      /** The pacing budget kept due events waiting: claim again soon, as the workers drain. */
      readonly paced: boolean;
    };

import type { HeldBy } from "../model/event.ts";

export type { HeldBy } from "../model/event.ts";

/** A group's allowance for one claim (see claim.lua): at most `allowance` events, the rest held by `reason`. */
export interface GroupAllowance {
  readonly group: string;
  readonly allowance: number;
  readonly reason: HeldBy;
}

export type StartResult =
  | { readonly code: ScriptCode.OK; readonly attempt: number; readonly body: string }
  | { readonly code: ScriptCode.NOT_FOUND | ScriptCode.DUPLICATE }
  | { readonly code: ScriptCode.STALE; readonly status: LiveStatus }
  | { readonly code: ScriptCode.EARLY; readonly runAt: number; readonly now: number };

/** Passed as `now` to `start`: judge "due" by the Redis server's clock, not the caller's. */
export const REDIS_TIME = "redis";

export type TransitionResult =
  | { readonly code: ScriptCode.OK; readonly previous?: LiveStatus }
  | { readonly code: ScriptCode.NOT_FOUND }
  | { readonly code: ScriptCode.STALE | ScriptCode.CONFLICT; readonly status: LiveStatus };

export type RescheduleResult =
  | { readonly code: ScriptCode.NOT_FOUND }
  | { readonly code: ScriptCode.SCHEDULED | ScriptCode.STALE; readonly version: number }
  | {
      readonly code: ScriptCode.DISPATCHED;
      readonly attempt: number;
      readonly gen: number;
      readonly version: number;
    }
  | { readonly code: ScriptCode.CONFLICT; readonly status: LiveStatus };

/** Lease an event on the spot when it is due before `dispatchUntil`, so the caller sends it now. */
export interface DirectDispatch {
  readonly now: number;
  readonly dispatchUntil: number;
  readonly leaseMs: number;
}

export type ReviveResult =
  | { readonly code: ScriptCode.OK | ScriptCode.NOT_FOUND }
  | { readonly code: ScriptCode.DISPATCHED; readonly gen: number }
  | { readonly code: ScriptCode.STALE | ScriptCode.CONFLICT; readonly status: LiveStatus };

export interface LiveState {
  readonly status: LiveStatus;
  readonly attempt: number;
  readonly gen: number;
  readonly runAt: number;
  readonly body: string;
  /** Set while flow control holds the event back. */
  readonly heldBy?: HeldBy | undefined;
  /** The version the index's last reschedule or restore gave it (see reschedule.lua); 0 if none. */
  readonly version: number;
}

export interface ShardStats {
  readonly counters: Record<string, number>;
  readonly due: number;
  readonly leased: number;
  readonly dead: number;
  readonly oldestDue: number | undefined;
  readonly oldestLeaseDeadline: number | undefined;
  /** Entries set aside because no script could read them. */
  readonly quarantined: number;
}

type Reply = (string | number)[];

/** The scripts that take many items at once, one call per shard. */
type BatchScript = "schedule" | "start" | "ack" | "hold" | "revive" | "release" | "restore";

/** How `perShard` runs one batch script: the items' shards, its ARGV, and how its reply reads. */
interface BatchCall<T, R> {
  readonly shardOf: (item: T) => number;
  /** The script's ARGV before the items'. */
  readonly leading: readonly (string | number)[];
  readonly fields: (item: T) => readonly (string | number)[];
  /** Reply fields per item. */
  readonly stride: number;
  readonly parse: (reply: Reply, offset: number) => R;
}

/** The items are dispatch messages, passed as member, gen. */
const MESSAGES = {
  shardOf: (m: DispatchMessage) => m.shard,
  fields: (m: DispatchMessage) => [m.member, m.gen],
};

/** The reply is one ScriptCode per item. */
const CODES = { stride: 1, parse: (reply: Reply, i: number) => reply[i] as ScriptCode };

/**
 * The Redis time index: typed calls to the Lua scripts, one shard at a time. It knows nothing of
 * DynamoDB or SQS; the dispatcher, worker and event service compose it with those.
 */
export class RedisIndex {
  constructor(
    readonly client: RedisClient,
    readonly prefix: string,
    readonly shards: number,
    /**
     * Pacing (docs/flow-control.md, "Fairness between tenants"): events of a shard handed out and
     * unfinished at once in each window, beyond which creates wait in `due` for a fair claim
     * instead of going to the queue on the spot; 0 for none.
     */
    readonly shardInFlight = 0,
  ) {}

  shardOf(member: string): number {
    return shardOf(member, this.shards);
  }

  keys(shard: number): ShardKeys {
    return shardKeys(this.prefix, shard);
  }

  /**
   * Indexes events of any shards; one script call per shard. Codes come back in input order. With
   * `nearMs` (the near horizon plus its margin), an event due later than that is not indexed (FAR).
   */
  async schedule(
    entries: readonly IndexEntry[],
    now: number,
    dispatchUntil: number,
    leaseMs: number,
    nearMs?: number,
  ): Promise<ScriptCode[]> {
    return this.perShard("schedule", entries, {
      shardOf: (e) => this.shardOf(e.member),
      leading: [now, dispatchUntil, leaseMs, nearMs ?? "", this.shardInFlight],
      fields: (e) => [e.member, e.runAt, e.body],
      ...CODES,
    });
  }

  async claim(
    shard: number,
    now: number,
    dueUntil: number,
    limit: number,
    leaseMs: number,
    allowances: readonly GroupAllowance[] = [],
    /** Pacing (claim.lua): events handed out and unfinished per window at most; 0 for no bound. */
    budget = 0,
  ) {
    const k = this.keys(shard);
    const args: (string | number)[] = [now, dueUntil, limit, leaseMs, budget, allowances.length];
    for (const a of allowances) args.push(a.group, Math.max(0, Math.floor(a.allowance)), a.reason);
    const reply = (await runScript(this.client, "claim", k, args)) as Reply;
    if (reply[0] === ScriptCode.EPOCH_MISSING) return { epochMissing: true } as ClaimResult;
    const skip = Number(reply[1]);
    const parked = Number(reply[2]);
    const paced = reply[3] === 1;
    const groups = Number(reply[4]);
    const taken = new Map<string, number>();
    for (let i = 5; i < 5 + 2 * groups; i += 2) taken.set(String(reply[i]), Number(reply[i + 1]));
    const start = 5 + 2 * groups;
    const quarantined = reply.slice(start, start + skip).map(String);
    const claimed: (DispatchMessage & { redelivered: boolean })[] = [];
    for (let i = start + skip; i < reply.length; i += 5) {
      claimed.push({
        member: String(reply[i]),
        shard,
        runAt: Number(reply[i + 1]),
        attempt: Number(reply[i + 2]),
        gen: Number(reply[i + 3]),
        redelivered: reply[i + 4] === 1,
      });
    }
    return { epochMissing: false, claimed, quarantined, parked, taken, paced } as ClaimResult;
  }

  async start(
    message: DispatchMessage,
    now: number | typeof REDIS_TIME,
    leaseMs: number,
  ): Promise<StartResult> {
    return (await this.startMany([message], now, leaseMs))[0]!;
  }

  /** Starts many dispatched events: one script call per shard. Results come back in input order. */
  async startMany(
    messages: readonly DispatchMessage[],
    now: number | typeof REDIS_TIME,
    leaseMs: number,
  ): Promise<StartResult[]> {
    return this.perShard("start", messages, {
      ...MESSAGES,
      leading: [now === REDIS_TIME ? "" : now, leaseMs],
      stride: 3,
      parse: (reply, i) => {
        const code = reply[i] as ScriptCode;
        switch (code) {
          case ScriptCode.OK:
            return { code, attempt: Number(reply[i + 1]), body: String(reply[i + 2]) };
          case ScriptCode.STALE:
            return { code, status: reply[i + 1] as LiveStatus };
          case ScriptCode.EARLY:
            return { code, runAt: Number(reply[i + 1]), now: Number(reply[i + 2]) };
          case ScriptCode.NOT_FOUND:
          case ScriptCode.DUPLICATE:
            return { code };
          default:
            throw new IndexCorruptError("start", reply);
        }
      },
    });
  }

  /**
   * Holds dispatched events back (flow control refused to start them): each is parked until the
   * dispatcher releases it. One call per shard; codes (OK, NOT_FOUND, STALE) in input order.
   */
  async hold(
    messages: readonly DispatchMessage[],
    reason: HeldBy,
    from: "running" | "dispatched" = "running",
  ): Promise<ScriptCode[]> {
    return this.perShard("hold", messages, { ...MESSAGES, leading: [reason, from], ...CODES });
  }

  /** The groups (`tenant|type`) with parked events in a shard. */
  async heldGroups(shard: number): Promise<string[]> {
    return this.client.smembers(heldKeys(this.prefix, shard).heldgroups);
  }

  /** Parked events of one shard by `tenant|type|reason`. */
  async heldCounts(shard: number): Promise<Record<string, number>> {
    const raw = await this.client.hgetall(heldKeys(this.prefix, shard).heldcount);
    const counts: Record<string, number> = {};
    for (const [field, count] of Object.entries(raw)) if (Number(count) > 0) counts[field] = Number(count);
    return counts;
  }

  async ack(message: DispatchMessage): Promise<TransitionResult> {
    return (await this.ackMany([message]))[0]!;
  }

  /** Acks many running events: one script call per shard. Results come back in input order. */
  async ackMany(messages: readonly DispatchMessage[]): Promise<TransitionResult[]> {
    return this.perShard("ack", messages, {
      ...MESSAGES,
      leading: [],
      stride: 2,
      parse: (reply, i) => {
        const code = reply[i] as ScriptCode;
        if (code === ScriptCode.OK || code === ScriptCode.NOT_FOUND) return { code };
        if (code === ScriptCode.STALE) return { code, status: reply[i + 1] as LiveStatus };
        throw new IndexCorruptError("ack", reply);
      },
    });
  }

  /**
   * Runs a batch script once per shard over all of that shard's items: its ARGV is `leading`, then
   * each item's `fields`; the reply holds `stride` fields per item, in order, read by `parse`.
   */
  private perShard<T, R>(script: BatchScript, items: readonly T[], call: BatchCall<T, R>): Promise<R[]> {
    return this.eachShard(items, call.shardOf, async (shard, batch) => {
      const args = [...call.leading];
      for (const item of batch) args.push(...call.fields(item));
      const reply = (await runScript(this.client, script, this.keys(shard), args)) as Reply;
      return batch.map((_, n) => call.parse(reply, n * call.stride));
    });
  }

  /**
   * Puts a failed running event back in `due`, or, when `direct` is given and the retry is due
   * within its window, leases it on the spot: DISPATCHED means the caller must send it.
   */
  async retry(
    message: DispatchMessage,
    nextRunAt: number,
    direct?: DirectDispatch,
    /** The attempt was not the handler's (see DependencyUnavailableError): do not count it. */
    refund = false,
  ): Promise<TransitionResult | { readonly code: ScriptCode.DISPATCHED; readonly gen: number }> {
    const k = this.keys(message.shard);
    const reply = (await runScript(this.client, "retry", k, [
      message.member,
      message.gen,
      nextRunAt,
      direct?.now ?? 0,
      direct?.dispatchUntil ?? 0,
      direct?.leaseMs ?? 0,
      refund ? "1" : "0",
    ])) as Reply;
    if (reply[0] === ScriptCode.DISPATCHED) return { code: ScriptCode.DISPATCHED, gen: Number(reply[1]) };
    return transition("retry", reply);
  }

  async bury(message: DispatchMessage, now: number): Promise<TransitionResult> {
    const k = this.keys(message.shard);
    return transition("bury", await runScript(this.client, "bury", k, [message.member, message.gen, now]));
  }

  /** Cancels a not-yet-started event and leaves a tombstone that keeps restores away from it. */
  async cancel(member: string, now: number): Promise<TransitionResult> {
    const k = this.keys(this.shardOf(member));
    return transition("cancel", await runScript(this.client, "cancel", k, [member, now, TOMBSTONE_MS]));
  }

  /**
   * Moves a waiting or dispatched event to `runAt`. Without `journalVersion` it is a client's
   * reschedule (the index's version goes up); with it, a sync to the journal's time, applied only
   * when the journal is at least as new as the index.
   */
  async reschedule(
    member: string,
    runAt: number,
    now: number,
    dispatchUntil: number,
    leaseMs: number,
    journalVersion?: number,
  ): Promise<RescheduleResult> {
    const k = this.keys(this.shardOf(member));
    const reply = (await runScript(this.client, "reschedule", k, [
      member,
      runAt,
      now,
      dispatchUntil,
      leaseMs,
      journalVersion ?? "",
    ])) as Reply;
    switch (reply[0]) {
      case ScriptCode.NOT_FOUND:
        return { code: reply[0] };
      case ScriptCode.SCHEDULED:
      case ScriptCode.STALE:
        return { code: reply[0], version: Number(reply[1]) };
      case ScriptCode.DISPATCHED:
        return {
          code: ScriptCode.DISPATCHED,
          attempt: Number(reply[1]),
          gen: Number(reply[2]),
          version: Number(reply[3]),
        };
      case ScriptCode.CONFLICT:
        return { code: ScriptCode.CONFLICT, status: reply[1] as LiveStatus };
      default:
        throw new IndexCorruptError("reschedule", reply);
    }
  }

  /**
   * The journal says cancelled too: the cancel's tombstone may now be pruned once it is old enough
   * (one command on one key, so no script). Does nothing when there is no tombstone.
   */
  async confirmCancel(member: string, now: number): Promise<void> {
    await this.client.zadd(this.keys(this.shardOf(member)).cancelled, "XX", now, member);
  }

  /**
   * The journal has no such event: a cancel's tombstone for it protects nothing, and left in place
   * it would cancel an event created later under the same id when a loader or a sweep restores it.
   */
  async dropTombstone(member: string): Promise<void> {
    await this.client.zrem(this.keys(this.shardOf(member)).cancelled, member);
  }

  /** Replays one dead letter; see `reviveMany`. */
  async revive(
    member: string,
    runAt: number,
    options: { diedBefore?: number; direct?: DirectDispatch } = {},
  ): Promise<ReviveResult> {
    return (
      await this.reviveMany([{ member, runAt, diedBefore: options.diedBefore ?? 0 }], options.direct)
    )[0]!;
  }

  /**
   * Schedules dead letters again with their attempts reset. An entry that died after `diedBefore`
   * (the replayed journal item's `updatedAt`) is left dead (STALE): the journal read that asked for
   * it predates that death. Both are journal stamps, ordered by the journal whatever the clocks
   * (revive.lua). With `direct`, one due within its window is leased on the spot: DISPATCHED means
   * the caller must send it.
   */
  async reviveMany(
    entries: readonly { member: string; runAt: number; diedBefore: number }[],
    direct?: DirectDispatch,
  ): Promise<ReviveResult[]> {
    return this.perShard("revive", entries, {
      shardOf: (e) => this.shardOf(e.member),
      leading: [direct?.now ?? 0, direct?.dispatchUntil ?? 0, direct?.leaseMs ?? 0],
      fields: (e) => [e.member, e.runAt, e.diedBefore],
      stride: 3,
      parse: (reply, i): ReviveResult => {
        switch (reply[i]) {
          case ScriptCode.OK:
          case ScriptCode.NOT_FOUND:
            return { code: reply[i] as ScriptCode.OK | ScriptCode.NOT_FOUND };
          case ScriptCode.DISPATCHED:
            return { code: ScriptCode.DISPATCHED, gen: Number(reply[i + 2]) };
          case ScriptCode.STALE:
          case ScriptCode.CONFLICT:
            return {
              code: reply[i] as ScriptCode.STALE | ScriptCode.CONFLICT,
              status: reply[i + 1] as LiveStatus,
            };
          default:
            throw new IndexCorruptError("revive", reply);
        }
      },
    });
  }

  /**
   * Gives back the dispatch leases of messages that could not be sent: their deadline becomes
   * `at`, so a dispatcher tick soon after sends them again. One call per shard.
   */
  async release(messages: readonly DispatchMessage[], at: number): Promise<ScriptCode[]> {
    return this.perShard("release", messages, { ...MESSAGES, leading: [at], ...CODES });
  }

  /** Removes an event from the index; `finalStatus` undefined removes a leftover without counting it. */
  async forget(
    member: string,
    finalStatus: "succeeded" | "cancelled" | "dead" | undefined,
  ): Promise<TransitionResult> {
    const k = this.keys(this.shardOf(member));
    return transition("forget", await runScript(this.client, "forget", k, [member, finalStatus ?? ""]));
  }

  /**
   * Re-indexes events the journal holds; those the index already knows are left alone (or moved to
   * a newer journal version's time), and recently cancelled ones are refused unless `replay`.
   * With `nearMs`, a pending event due beyond the near horizon is left to the journal (FAR).
   */
  async restore(
    entries: readonly RestoreEntry[],
    now: number,
    options: { replay?: boolean; nearMs?: number | undefined } = {},
  ): Promise<ScriptCode[]> {
    return this.perShard("restore", entries, {
      shardOf: (e) => this.shardOf(e.member),
      leading: [now, options.replay ? "1" : "0", options.nearMs ?? ""],
      fields: (e) => [e.member, e.runAt, e.body, e.attempt, e.status, e.version],
      ...CODES,
    });
  }

  async inspect(member: string): Promise<LiveState | undefined> {
    const k = this.keys(this.shardOf(member));
    const reply = (await runScript(this.client, "inspect", k, [member])) as Reply;
    if (reply[0] === ScriptCode.NOT_FOUND) return undefined;
    return {
      status: reply[1] as LiveStatus,
      attempt: Number(reply[2]),
      gen: Number(reply[3]),
      runAt: Number(reply[4]),
      body: String(reply[5]),
      ...(reply[6] ? { heldBy: reply[6] as HeldBy } : {}),
      version: Number(reply[7]),
    };
  }

  /** Drops up to `limit` dead letters of one shard that died before `cutoff`; returns how many. */
  async expire(shard: number, cutoff: number, limit: number): Promise<number> {
    const k = this.keys(shard);
    return Number(await runScript(this.client, "expire", k, [cutoff, limit]));
  }

  /** The journal cursor a running rebuild has reached ("" at its start); undefined when none runs. */
  async rebuildCursor(shard: number): Promise<string | undefined> {
    return (await this.client.get(this.keys(shard).rebuild)) ?? undefined;
  }

  /**
   * Starts a rebuild after a data loss: the cursor first, then an epoch marking the shard usable,
   * in one transaction (one slot), so claims go on with what is restored while the rebuild runs
   * and a crash never leaves an epoch without a rebuild to finish.
   */
  async startRebuild(shard: number, now: number, loadUntil?: number): Promise<void> {
    const k = this.keys(shard);
    const transaction = this.client.multi().set(k.rebuild, "").set(k.epoch, `rebuilding since ${now}`);
    // Only the near horizon is rebuilt (up to `loadUntil`); the loader takes over from there.
    if (loadUntil !== undefined) transaction.del(k.horizon).hset(k.horizon, "loaded", loadUntil);
    await this.exec(transaction);
  }

  async saveRebuildCursor(shard: number, cursor: string): Promise<void> {
    await this.client.set(this.keys(shard).rebuild, cursor, "XX");
  }

  async finishRebuild(shard: number, now: number): Promise<void> {
    const k = this.keys(shard);
    await this.exec(this.client.multi().del(k.rebuild).set(k.epoch, String(now)));
  }

  private async exec(transaction: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<void> {
    const results = await transaction.exec();
    if (!results) throw new IndexCorruptError("multi", []);
    for (const [error] of results) if (error) throw error;
  }

  async hasEpoch(shard: number): Promise<boolean> {
    return (await this.client.exists(this.keys(shard).epoch)) === 1;
  }

  async setEpoch(shard: number, value: string): Promise<void> {
    await this.client.set(this.keys(shard).epoch, value);
  }

  /**
   * Counts a transition the scripts did not see in the shard's stats (the fields countStats in
   * state.lua keeps): a far event, which lives in the journal only, cancelled there.
   */
  async countTransition(member: string, type: string, status: EventStatus): Promise<void> {
    const { tenant } = parseMember(member);
    await this.client.hincrby(this.keys(this.shardOf(member)).stats, `${tenant}|${type}|${status}`, 1);
  }

  /** Counters and sizes of one shard, read in one pipeline (one slot, so it works on a cluster). */
  async shardStats(shard: number): Promise<ShardStats> {
    const k = this.keys(shard);
    const results = await this.client
      .pipeline()
      .hgetall(k.stats)
      .zcard(k.due)
      .zcard(k.leased)
      .zcard(k.dead)
      .zrange(k.due, 0, 0, "WITHSCORES")
      .zrange(k.leased, 0, 0, "WITHSCORES")
      .hlen(k.quarantine)
      .get(dueCountKey(this.prefix, shard))
      .zrange(k.tenants, 0, 0, "WITHSCORES")
      .exec();
    if (!results) throw new IndexCorruptError("shardStats", []);
    for (const [error] of results) if (error) throw error;
    const value = (i: number) => results[i]![1];
    const counters: Record<string, number> = {};
    for (const [field, count] of Object.entries(value(0) as Record<string, string>))
      counters[field] = Number(count);
    const first = (i: number) => {
      const pair = value(i) as string[];
      return pair.length === 2 ? Number(pair[1]) : undefined;
    };
    // Waiting events are in the tenants' sets (counted in `duecount`), and legacy ones in `due`.
    const legacyDue = first(4);
    const tenantsDue = first(8);
    return {
      counters,
      due: Number(value(1)) + Number(value(7) ?? 0),
      leased: Number(value(2)),
      dead: Number(value(3)),
      oldestDue:
        legacyDue === undefined || tenantsDue === undefined
          ? (legacyDue ?? tenantsDue)
          : Math.min(legacyDue, tenantsDue),
      oldestLeaseDeadline: first(5),
      quarantined: Number(value(6)),
    };
  }

  /**
   * Groups items by shard, runs one call per shard (in parallel: each touches one hash tag, so
   * one cluster slot), and puts the per-item results back in input order.
   */
  private async eachShard<T, R>(
    items: readonly T[],
    shardOf: (item: T) => number,
    run: (shard: number, batch: T[]) => Promise<R[]>,
  ): Promise<R[]> {
    const byShard = new Map<number, number[]>();
    items.forEach((item, index) => {
      const shard = shardOf(item);
      const list = byShard.get(shard);
      if (list) list.push(index);
      else byShard.set(shard, [index]);
    });
    const results: R[] = new Array(items.length);
    await Promise.all(
      [...byShard].map(async ([shard, indexes]) => {
        const replies = await run(
          shard,
          indexes.map((i) => items[i]!),
        );
        indexes.forEach((index, i) => {
          results[index] = replies[i]!;
        });
      }),
    );
    return results;
  }
}

function transition(script: string, raw: unknown): TransitionResult {
  const reply = raw as Reply;
  switch (reply[0]) {
    case ScriptCode.OK:
      return reply.length > 1
        ? { code: ScriptCode.OK, previous: reply[1] as LiveStatus }
        : { code: ScriptCode.OK };
    case ScriptCode.NOT_FOUND:
      return { code: ScriptCode.NOT_FOUND };
    case ScriptCode.STALE:
    case ScriptCode.CONFLICT:
      return { code: reply[0], status: reply[1] as LiveStatus };
    default:
      throw new IndexCorruptError(script, reply);
  }
}
