import { ScriptCode } from "./codes.ts";
import { IndexCorruptError } from "./errors.ts";
import type { RedisIndex } from "./redis-index.ts";
import { runScript } from "./scripts.ts";

/** One shard's near-horizon state, read with Redis's clock (see lua/horizon.lua, docs/horizon.md). */
export interface HorizonState {
  /** Redis's clock (ms), on the node that holds the shard. */
  readonly redisNow: number;
  /** Every pending journal event of the shard due at or before this is in the index; undefined when unknown. */
  readonly loaded: number | undefined;
  /** An unfinished sweep: the due time it runs to, and the journal position it reached. */
  readonly sweep: { readonly target: number; readonly cursor: string } | undefined;
  readonly hasEpoch: boolean;
  readonly rebuilding: boolean;
}

/**
 * The index's side of the near horizon: the loader's watermark and resumable sweep in a per-shard
 * hash, and the eviction of entries a reschedule moved far. Kept apart from `RedisIndex` because
 * only the loader and the reschedule path use it.
 */
export class HorizonStore {
  constructor(private readonly index: RedisIndex) {}

  async state(shard: number): Promise<HorizonState> {
    const k = this.index.keys(shard);
    const reply = (await runScript(this.index.client, "horizon", k, [])) as (string | number)[];
    if (reply.length !== 6) throw new IndexCorruptError("horizon", reply);
    const number = (value: string | number | undefined) =>
      value === "" || value === undefined ? undefined : Number(value);
    const target = number(reply[2]);
    return {
      redisNow: Number(reply[0]),
      loaded: number(reply[1]),
      sweep: target === undefined ? undefined : { target, cursor: String(reply[3]) },
      hasEpoch: reply[4] === 1,
      rebuilding: reply[5] === 1,
    };
  }

  /** Records a sweep's progress: the journal position after the pages already promoted. */
  async saveSweep(shard: number, target: number, cursor: string): Promise<void> {
    await this.index.client.hset(this.index.keys(shard).horizon, "target", target, "cursor", cursor);
  }

  /**
   * A sweep reached its target: everything pending due by then is in the index. Two loaders at
   * once may write out of order; an older target only makes the next sweep read more, never less.
   */
  async finishSweep(shard: number, target: number): Promise<void> {
    const key = this.index.keys(shard).horizon;
    const results = await this.index.client
      .multi()
      .hset(key, "loaded", target)
      .hdel(key, "target", "cursor")
      .exec();
    if (!results) throw new IndexCorruptError("multi", []);
    for (const [error] of results) if (error) throw error;
  }

  /**
   * Takes a waiting entry out of the index when a reschedule (which handed out `version`) moved it
   * beyond the near horizon. Only that exact entry, still waiting, and still far by Redis's clock.
   */
  async evict(member: string, version: number, now: number, nearMs: number): Promise<boolean> {
    const k = this.index.keys(this.index.shardOf(member));
    const code = Number(await runScript(this.index.client, "evict", k, [member, version, now, nearMs]));
    return code === ScriptCode.OK;
  }
}
