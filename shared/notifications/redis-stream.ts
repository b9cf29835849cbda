import { decodeBody } from "../engine/body.ts";
import { notificationStreamKey, shardKeys } from "../engine/keys.ts";
import { type RedisClient, runScript } from "../engine/scripts.ts";
import type { Logger } from "../logger.ts";
import type { TransitionNotice } from "./model.ts";
import { describe, type NotificationSink } from "./notifier.ts";
import { appendStreamEntry } from "./stream-entry.ts";

/**
 * Appends each tenant's notices to its capped stream (`XADD … MAXLEN ~ n`), the source of
 * `GET /v1/events/stream`, one compact entry a notice (stream-entry.ts), one script call a tenant
 * per batch, all in flight at once: on a cluster each goes to its tenant's node. The notifier
 * delivers one batch at a time, so a tenant's entries keep the publish order.
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
    // One script call per tenant (publish.lua): its entries share one key (one slot on a cluster)
    // and are appended in publish order. One command per notice cost the client more CPU than
    // Redis spends on the appends (a batch of 500 creates publishes 500 notices).
    let failed = 0;
    let firstError: unknown;
    await Promise.all(
      [...byTenant].map(async ([tenant, list]) => {
        const args: (string | number)[] = [this.maxLen];
        for (const notice of list) {
          // The count goes before the fields, once they are written.
          const at = args.push(0) - 1;
          args[at] = appendStreamEntry(args, notice);
        }
        try {
          const appended = Number(
            await runScript(
              this.redis,
              "publish",
              { stream: notificationStreamKey(this.prefix, tenant) },
              args,
            ),
          );
          failed += list.length - appended;
        } catch (error) {
          // Entries before a failing append stay; the notifier does not retry, so none repeats.
          failed += list.length;
          firstError ??= error;
        }
      }),
    );
    if (failed > 0) {
      this.logger.warn("notifications not appended to the tenant streams", {
        count: failed,
        error: describe(firstError ?? new Error("fewer entries appended than sent")),
      });
    }
    return failed;
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
