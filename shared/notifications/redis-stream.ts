import { decodeBody } from "../engine/body.ts";
import { notificationStreamKey, shardKeys } from "../engine/keys.ts";
import type { RedisClient } from "../engine/scripts.ts";
import type { Logger } from "../logger.ts";
import type { TransitionNotice } from "./model.ts";
import { describe, type NotificationSink } from "./notifier.ts";
import { encodeStreamEntry } from "./stream-entry.ts";

/**
 * Appends each tenant's notices to its capped stream (`XADD … MAXLEN ~ n`), the source of
 * `GET /v1/events/stream`, one compact entry a notice (stream-entry.ts). One command per notice,
 * a pipeline per tenant, all written at once: on a cluster each pipeline goes to its tenant's
 * node. Commands on one key reach Redis in the order they are sent, so a tenant's entries keep
 * the publish order.
 */
export class RedisStreamSink implements NotificationSink {
  readonly name = "redis-stream";

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly maxLen: number,
    private readonly logger: Logger,
  ) {}

  async deliver(notices: readonly TransitionNotice[]): Promise<number> {
    const byTenant = new Map<string, TransitionNotice[]>();
    for (const notice of notices) {
      const list = byTenant.get(notice.tenant);
      if (list) list.push(notice);
      else byTenant.set(notice.tenant, [notice]);
    }
    // One pipeline per tenant: its commands share one key (one slot on a cluster) and go out in
    // one socket write, in publish order, instead of one write per notice (a batch of 500 creates
    // publishes 500 notices).
    const failures: unknown[] = [];
    await Promise.all(
      [...byTenant].map(async ([tenant, list]) => {
        const key = notificationStreamKey(this.prefix, tenant);
        const pipeline = this.redis.pipeline();
        for (const notice of list) {
          pipeline.xadd(key, "MAXLEN", "~", this.maxLen, "*", ...encodeStreamEntry(notice));
        }
        try {
          const replies = (await pipeline.exec()) ?? [];
          list.forEach((_, i) => {
            const reply = replies[i];
            if (!reply || reply[0]) failures.push(reply?.[0] ?? new Error("no reply"));
          });
        } catch (error) {
          for (const _ of list) failures.push(error);
        }
      }),
    );
    if (failures.length > 0) {
      this.logger.warn("notifications not appended to the tenant streams", {
        count: failures.length,
        error: describe(failures[0]),
      });
    }
    return failures.length;
  }
}

/**
 * Fills in the type of notices published without one (the dispatcher's claims, reschedules),
 * from the index's body hash: one HMGET per shard per batch, off the event's path. An event the
 * index no longer holds keeps an empty type.
 */
export function indexTypeResolver(
  redis: RedisClient,
  prefix: string,
  shardOf: (member: string) => number,
): (notices: readonly TransitionNotice[]) => Promise<void> {
  return async (notices) => {
    const byShard = new Map<number, TransitionNotice[]>();
    for (const notice of notices) {
      if (notice.type !== undefined) continue;
      const shard = shardOf(`${notice.tenant}/${notice.id}`);
      const list = byShard.get(shard) ?? [];
      list.push(notice);
      byShard.set(shard, list);
    }
    await Promise.all(
      [...byShard].map(async ([shard, list]) => {
        const bodies = await redis.hmget(
          shardKeys(prefix, shard).body,
          ...list.map((n) => `${n.tenant}/${n.id}`),
        );
        list.forEach((notice, i) => {
          const body = bodies[i];
          if (body) notice.type = decodeBody(body).type;
        });
      }),
    );
  };
}
