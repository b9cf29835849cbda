import { ScriptCode } from "./codes.ts";
import { IndexCorruptError } from "./errors.ts";
import { deploymentKeys } from "./keys.ts";
import type { RedisIndex } from "./redis-index.ts";
import { runScript } from "./scripts.ts";

/** One shard's recovery state (lua/recovery.lua); undefined when the shard is lost or rebuilding. */
export interface RecoveryState {
  /** Every pending journal event due at or before this was found in the index; undefined when unknown. */
  readonly verified: number | undefined;
  /** An unfinished pass: the due time it reads up to, and the journal position it reached. */
  readonly pass: { readonly until: number; readonly cursor: string } | undefined;
}

/**
 * The index's side of the recovery sweep (shared/events/recovery.ts): the per-shard watermark and
 * resumable pass, and the deployment-wide round (which shard is next, then expire()) that every
 * dispatcher continues where the last one stopped. Kept apart from `RedisIndex`, which only the
 * sweep and the writes that lower the watermark need.
 */
export class RecoveryStore {
  private readonly deployment;

  constructor(private readonly index: RedisIndex) {
    this.deployment = deploymentKeys(index.prefix);
  }

  async state(shard: number, now: number, reverifyMs: number): Promise<RecoveryState | undefined> {
    const reply = (await runScript(this.index.client, "recovery", this.index.keys(shard), [
      now,
      reverifyMs,
    ])) as (string | number)[];
    if (reply[0] === ScriptCode.NOT_FOUND) return undefined;
    if (reply[0] !== ScriptCode.OK || reply.length !== 4) throw new IndexCorruptError("recovery", reply);
    const number = (value: string | number | undefined) =>
      value === "" || value === undefined ? undefined : Number(value);
    const until = number(reply[2]);
    return {
      verified: number(reply[1]),
      pass: until === undefined ? undefined : { until, cursor: String(reply[3]) },
    };
  }

  /** A pass's progress after the pages before `cursor` were restored; "" when it is done. */
  async save(shard: number, until: number, cursor: string, now: number): Promise<void> {
    await runScript(this.index.client, "recovery_save", this.index.keys(shard), [until, cursor, now]);
  }

  /**
   * Before a journal write that may leave a pending event due at `due` out of the index: the
   * sweep's watermark of that shard drops below it (lua/includes/recovery.lua).
   */
  async lower(shard: number, due: number): Promise<void> {
    const code = Number(await runScript(this.index.client, "recovery_lower", this.index.keys(shard), [due]));
    if (code !== ScriptCode.OK) throw new IndexCorruptError("recovery_lower", [code]);
  }

  /**
   * Forgets what the shard's sweep verified: the next pass reads the whole backlog again. Through
   * `lower`, so a pass running now cannot verify what it read before this call either.
   */
  async reset(shard: number): Promise<void> {
    await this.lower(shard, -Number.MAX_SAFE_INTEGER);
  }

  /** The shard the unfinished round works on next (the shard count: expire()); undefined when idle. */
  async round(): Promise<number | undefined> {
    const value = await this.index.client.get(this.deployment.recoveryRound);
    return value === null ? undefined : Number(value);
  }

  async setRound(next: number | undefined): Promise<void> {
    if (next === undefined) await this.index.client.del(this.deployment.recoveryRound);
    else await this.index.client.set(this.deployment.recoveryRound, next);
  }

  /** One dispatcher steps the round at a time; the lock lapses by itself if its holder dies. */
  async lock(owner: string, ttlMs: number): Promise<boolean> {
    const won = await this.index.client.set(this.deployment.recoveryLock, owner, "PX", ttlMs, "NX");
    return won === "OK";
  }

  /**
   * Lets go of the lock if it is still this owner's. Not atomic: if it lapsed and another took it
   * in between, two sweepers run at once for a while, which repeats reads and harms nothing.
   */
  async unlock(owner: string): Promise<void> {
    if ((await this.index.client.get(this.deployment.recoveryLock)) === owner)
      await this.index.client.del(this.deployment.recoveryLock);
  }
}
