/**
 * Every Redis key Hourglass uses is built here, so the layout can be read in one place.
 *
 * Each shard's keys share one hash tag, `{prefix:shard}`, so every script touches a single slot and
 * runs unchanged on Redis Cluster, ElastiCache cluster mode and ElastiCache Serverless (Valkey).
 * None of these keys ever carries a TTL: they are an index, and an index that forgets is a bug.
 */
export interface ShardKeys {
  /**
   * ZSET member → runAt (ms): waiting events written before the per-tenant sets (`tenantDueKey`)
   * held them, or by hand. Read as a legacy inbox: claims move its due head into the tenants' sets,
   * and any write of an event takes it out of here (lua/includes/due.lua). Its key also gives the
   * scripts the shard's hash tag.
   */
  readonly due: string;
  /**
   * ZSET tenant → the earliest runAt (ms) in its set of waiting events (`tenantDueKey`): the tenants
   * with waiting events, so claims take turns across tenants (docs/flow-control.md, "Fairness
   * between tenants"). Kept in step by lua/includes/due.lua.
   */
  readonly tenants: string;
  /** ZSET member → lease deadline (ms): claimed events (dispatched or running). */
  readonly leased: string;
  /** ZSET member → time of death (ms): dead letters, kept until replayed or cancelled. */
  readonly dead: string;
  /** HASH member → immutable body: `type\n{envelope json}`. Present for every live event. */
  readonly body: string;
  /**
   * HASH member → mutable `status|attempt|gen|runAt[|version]`. Absent means scheduled, attempt 0,
   * gen 0, version 0. The version is the journal's (see reschedule.lua).
   */
  readonly meta: string;
  /** HASH `tenant|type|status` → count. */
  readonly stats: string;
  /** STRING: present while the shard's index is known to be complete; missing after data loss. */
  readonly epoch: string;
  /** HASH member → `reason\nmeta\nbody`: entries the scripts could not read, set aside by claim. */
  readonly quarantine: string;
  /** ZSET member → cancel time (ms): recent cancels, which no restore may bring back. */
  readonly cancelled: string;
  /**
   * STRING: present while the shard is being rebuilt from the journal after a data loss: the
   * journal cursor reached so far ("" at the start). Lets the rebuild resume in the next call.
   */
  readonly rebuild: string;
  /**
   * HASH `loaded` → the due time (ms) up to which the journal's pending events are in the index;
   * `target`, `cursor` → an unfinished loader sweep (see docs/horizon.md). Lost with the rest of
   * the shard, and rewritten by the rebuild that follows.
   */
  readonly horizon: string;
  /**
   * HASH of the recovery sweep (shared/events/recovery.ts): `verified` → the due time up to which
   * every pending journal event of the shard was found in the index, `epoch` → the shard's epoch
   * it holds for, `since` → when it was first set; `until`, `cursor` → an unfinished pass; `low`
   * → the earliest due time a write put back into the verified range (lua/includes/recovery.lua).
   * Lost with the shard, and reset by a rebuild: a watermark that is not known is not assumed.
   */
  readonly recovery: string;
}

export function shardKeys(prefix: string, shard: number): ShardKeys {
  const tag = `{${prefix}:${shard}}`;
  return {
    due: `${tag}:due`,
    tenants: `${tag}:tenants`,
    leased: `${tag}:leased`,
    dead: `${tag}:dead`,
    body: `${tag}:body`,
    meta: `${tag}:meta`,
    stats: `${tag}:stats`,
    epoch: `${tag}:epoch`,
    quarantine: `${tag}:quarantine`,
    cancelled: `${tag}:cancelled`,
    rebuild: `${tag}:rebuild`,
    horizon: `${tag}:horizon`,
    recovery: `${tag}:recovery`,
  };
}

/**
 * Flow-control keys of one tenant (docs/flow-control.md). They share the tenant's own hash tag, so
 * admit.lua decides for all of a tenant's types and its cap on running events in one slot. Unlike
 * the index these are not the durable record: the limits live in DynamoDB and are mirrored here,
 * and slots and buckets are rebuilt by use (a lost slot set frees its slots early, never loses work).
 */
export interface LimitKeys {
  /** ZSET member → slot deadline (ms): the tenant's running events, for its cap. */
  readonly running: string;
  /** HASH {tokens, at}: the tenant's bucket of creates (API). */
  readonly creates: string;
  /** HASH {version, paused, rate, burst, max}: a type's limits, mirrored from DynamoDB. */
  cfg(type: string): string;
  /** HASH {tokens, at}: a type's rate bucket. */
  bucket(type: string): string;
  /** ZSET member → slot deadline (ms): a type's running events, for its maxConcurrency. */
  slots(type: string): string;
}

export function limitKeys(prefix: string, tenant: string): LimitKeys {
  const tag = `{${prefix}:limits:${tenant}}`;
  return {
    running: `${tag}:running`,
    creates: `${tag}:creates`,
    cfg: (type) => `${tag}:cfg:${type}`,
    bucket: (type) => `${tag}:bucket:${type}`,
    slots: (type) => `${tag}:slots:${type}`,
  };
}

/**
 * ZSET id → runAt (ms): one tenant's waiting events of a shard (its members without the `tenant/`
 * prefix), all of them: the record of what waits and when (lua/includes/due.lua). The scripts build
 * it from the shard's tag.
 */
export function tenantDueKey(prefix: string, shard: number, tenant: string): string {
  return `{${prefix}:${shard}}:tdue:${tenant}`;
}

/**
 * STRING: how many waiting events a shard's tenant sets (`tenantDueKey`) hold that its legacy `due`
 * does not (so the shard's waiting events are this plus `due`'s size), kept exact by
 * lua/includes/due.lua from what ZADD and ZREM answer. The scripts build it from the shard's tag.
 */
export function dueCountKey(prefix: string, shard: number): string {
  return `{${prefix}:${shard}}:duecount`;
}

/** Per-shard flow-control keys (parking, see `park` in state.lua). The scripts build them from the tag. */
export function heldKeys(prefix: string, shard: number) {
  const tag = `{${prefix}:${shard}}`;
  return {
    /** HASH member → reason, for every parked event of the shard. */
    holds: `${tag}:holds`,
    /** HASH `tenant|type|reason` → count of parked events. */
    heldcount: `${tag}:heldcount`,
    /** SET of groups (`tenant|type`) that have parked events. */
    heldgroups: `${tag}:heldgroups`,
    /** ZSET member → runAt: a group's parked events. */
    held: (group: string) => `${tag}:held:${group}`,
  };
}

/**
 * Keys that belong to the whole deployment rather than to a shard. They are not index keys: the
 * throttle carries a TTL on purpose, and each has its own hash tag so it is valid on Redis Cluster.
 */
export interface DeploymentKeys {
  /** STRING with a TTL: set by the dispatcher that won this period's recovery sweep. */
  readonly recoveryThrottle: string;
  /** STRING: the shard the unfinished recovery round works on next (the shard count: expire()). */
  readonly recoveryRound: string;
  /** STRING with a TTL: the dispatcher stepping the recovery round now, so two never do it at once. */
  readonly recoveryLock: string;
  /** STRING, the pause time: present while the operator has paused dispatch. */
  readonly dispatchPaused: string;
}

export function deploymentKeys(prefix: string): DeploymentKeys {
  return {
    recoveryThrottle: `${prefix}:recovery-throttle`,
    recoveryRound: `{${prefix}:recovery}:round`,
    recoveryLock: `{${prefix}:recovery}:lock`,
    dispatchPaused: `{${prefix}:admin}:dispatch-paused`,
  };
}

/** Tenants never contain `/`, so the first `/` splits a member back into tenant and id. */
export function memberOf(tenant: string, id: string): string {
  return `${tenant}/${id}`;
}

export function parseMember(member: string): { tenant: string; id: string } {
  const slash = member.indexOf("/");
  return { tenant: member.slice(0, slash), id: member.slice(slash + 1) };
}

/** FNV-1a (32 bit): stable across processes and runtimes, cheap, and evenly spread for short ids. */
export function shardOf(member: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < member.length; i++) {
    hash ^= member.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}

/**
 * One SKU's hold admission (shared/ledger/admission.ts), all under one hash tag per tenant and SKU
 * so each script touches one slot. The level and pending admissions are a cache of the stock
 * ledger (DynamoDB): when they are missing they are rebuilt from it. `carry` and `lock` live only
 * while a rebuild runs, so they carry a TTL (a rebuild that dies must not block the next one).
 */
export interface StockKeys {
  /** HASH `available` → stock the ledger has available, less unsettled admissions; `syncedAt` (ms). */
  readonly level: string;
  /** ZSET `quantity|attempt|reservationId` → deadline (ms): admitted, ledger write not settled. */
  readonly pending: string;
  /** STRING: stock returned while a rebuild runs (see hold_credit.lua). */
  readonly carry: string;
  /** STRING: the rebuild lock's token (SET NX PX). */
  readonly lock: string;
}

export function stockKeys(prefix: string, tenant: string, sku: string): StockKeys {
  const tag = `{${prefix}:stock:${tenant}:${sku}}`;
  return {
    level: `${tag}:level`,
    pending: `${tag}:pending`,
    carry: `${tag}:carry`,
    lock: `${tag}:lock`,
  };
}

/**
 * STREAM of a tenant's notifications (every transition of its events), capped by length. Not an
 * index key: it is written after the transitions, by the notifier, and it may be trimmed or lost.
 */
export function notificationStreamKey(prefix: string, tenant: string): string {
  return `{${prefix}:notify:${tenant}}:stream`;
}
