import { decodeBody } from "../engine/body.ts";
import { notificationStreamKey, shardKeys } from "../engine/keys.ts";
import type { RedisClient } from "../engine/scripts.ts";
import type { Logger } from "../logger.ts";
import { detailOf, type TransitionNotice } from "./model.ts";
import { describe, type NotificationSink } from "./notifier.ts";

/** The stream entry's one field: the notification as JSON. */
export const STREAM_FIELD = "n";

/**
 * Appends each tenant's notices to its capped stream (`XADD … MAXLEN ~ n`), the source of
 * `GET /v1/events/stream`. One command per notice, all written at once: on a standalone Redis
 * ioredis sends them back to back; on a cluster each goes to its tenant's node. Commands on one
 * key reach Redis in the order they are sent, so a tenant's entries keep the publish order.
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
    const results = await Promise.allSettled(
      notices.map((notice) =>
        this.redis.xadd(
          notificationStreamKey(this.prefix, notice.tenant),
          "MAXLEN",
          "~",
          this.maxLen,
          "*",
          STREAM_FIELD,
          JSON.stringify(detailOf(notice)),
        ),
      ),
    );
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failures.length > 0) {
      this.logger.warn("notifications not appended to the tenant streams", {
        count: failures.length,
        error: describe(failures[0]!.reason),
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
