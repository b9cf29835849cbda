/**
 * Every Redis key Hourglass uses is built here, so the layout can be read in one place.
 *
 * Each shard's keys share one hash tag, `{prefix:shard}`, so every script touches a single slot and
 * runs unchanged on Redis Cluster, ElastiCache cluster mode and ElastiCache Serverless (Valkey).
 * None of these keys ever carries a TTL: they are an index, and an index that forgets is a bug.
 */
export interface ShardKeys {
  /** ZSET member → runAt (ms): events waiting to be claimed (scheduled or retrying). */
  readonly due: string;
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
}

export function shardKeys(prefix: string, shard: number): ShardKeys {
  const tag = `{${prefix}:${shard}}`;
  return {
    due: `${tag}:due`,
    leased: `${tag}:leased`,
    dead: `${tag}:dead`,
    body: `${tag}:body`,
    meta: `${tag}:meta`,
    stats: `${tag}:stats`,
    epoch: `${tag}:epoch`,
    quarantine: `${tag}:quarantine`,
    cancelled: `${tag}:cancelled`,
    rebuild: `${tag}:rebuild`,
  };
}

/**
 * Keys that belong to the whole deployment rather than to a shard. They are not index keys: the
 * throttle carries a TTL on purpose, and each has its own hash tag so it is valid on Redis Cluster.
 */
export interface DeploymentKeys {
  /** STRING with a TTL: set by the dispatcher that won this period's recovery sweep. */
  readonly recoveryThrottle: string;
  /** STRING, the pause time: present while the operator has paused dispatch. */
  readonly dispatchPaused: string;
}

export function deploymentKeys(prefix: string): DeploymentKeys {
  return {
    recoveryThrottle: `${prefix}:recovery-throttle`,
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
