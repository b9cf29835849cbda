import { notificationStreamKey } from "../engine/keys.ts";
import type { RedisClient } from "../engine/scripts.ts";
import type { NotificationDetail } from "./model.ts";
import { decodeStreamEntry } from "./stream-entry.ts";

/** A Redis stream entry id, `<ms>-<seq>`: also the SSE `id:` and what `Last-Event-ID` echoes. */
export const STREAM_ID = /^\d{1,15}-\d{1,15}$/;

export interface StreamFilter {
  readonly type?: string | undefined;
  readonly id?: string | undefined;
  /** Only occurrences of this recurring schedule. */
  readonly schedule?: string | undefined;
}

export interface StreamEntry {
  readonly streamId: string;
  readonly detail: NotificationDetail;
}

/** Where a subscription starts, and whether the window no longer holds what the client missed. */
export interface StreamStart {
  readonly after: string;
  /** Set when entries after the client's Last-Event-ID were trimmed (or the stream was lost). */
  readonly gap?: { readonly lastEventId: string; readonly oldestId: string | null; readonly reason: string };
}

export function compareIds(a: string, b: string): number {
  const [am, as] = a.split("-").map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split("-").map(BigInt) as [bigint, bigint];
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

export function matches(detail: NotificationDetail, filter: StreamFilter): boolean {
  if (filter.type !== undefined && detail.type !== filter.type) return false;
  if (filter.id !== undefined && detail.id !== filter.id) return false;
  if (filter.schedule !== undefined && detail.scheduleId !== filter.schedule) return false;
  return true;
}

/**
 * Reads one tenant's notification stream for a subscriber. Each subscriber reads with its own
 * connection (a blocking XREAD holds it), made by `open` and closed by `close`.
 */
export class StreamSubscription {
  private readonly key: string;
  private closed = false;

  constructor(
    private readonly connection: RedisClient,
    prefix: string,
    private readonly tenant: string,
  ) {
    this.key = notificationStreamKey(prefix, tenant);
  }

  /**
   * Without a Last-Event-ID the subscription starts after the newest entry (only what happens
   * next). With one it resumes right after it, and says so when the capped window has already
   * dropped entries after it: Redis 7 keeps `max-deleted-entry-id` for exactly this.
   */
  async start(lastEventId: string | undefined): Promise<StreamStart> {
    const info = await this.info();
    if (lastEventId === undefined) return { after: info?.lastGeneratedId ?? "0-0" };
    if (!info) {
      // A client that saw entries, and a stream that is gone: Redis lost its data.
      return { after: "0-0", gap: { lastEventId, oldestId: null, reason: "stream-lost" } };
    }
    if (compareIds(lastEventId, info.lastGeneratedId) > 0) {
      // An id this stream never handed out (another deployment, or a stream rebuilt from zero).
      return {
        after: info.lastGeneratedId,
        gap: { lastEventId, oldestId: info.firstId, reason: "unknown-id" },
      };
    }
    // Trimming moves the first entry past the client's last one (the entry it last saw is gone,
    // so what followed it may be too); an XDEL after it raises max-deleted-entry-id.
    const trimmed =
      info.firstId === null
        ? compareIds(lastEventId, info.lastGeneratedId) < 0
        : compareIds(lastEventId, info.firstId) < 0;
    if (trimmed || compareIds(lastEventId, info.maxDeletedId) < 0) {
      return { after: lastEventId, gap: { lastEventId, oldestId: info.firstId, reason: "trimmed" } };
    }
    return { after: lastEventId };
  }

  private async info(): Promise<
    { lastGeneratedId: string; maxDeletedId: string; firstId: string | null } | undefined
  > {
    let reply: unknown[];
    try {
      reply = (await this.connection.call("XINFO", "STREAM", this.key)) as unknown[];
    } catch (error) {
      if (error instanceof Error && /no such key/i.test(error.message)) return undefined;
      throw error;
    }
    const field = (name: string) => reply[reply.indexOf(name) + 1];
    const first = field("first-entry") as [string, string[]] | null;
    return {
      lastGeneratedId: String(field("last-generated-id")),
      maxDeletedId: String(field("max-deleted-entry-id") ?? "0-0"),
      firstId: first ? first[0] : null,
    };
  }

  /** Entries after `after`, waiting up to `blockMs` for the first; [] on timeout or close. */
  async read(after: string, blockMs: number, count: number): Promise<StreamEntry[]> {
    if (this.closed) return [];
    let reply: [string, [string, string[]][]][] | null;
    try {
      reply = (await this.connection.xread("COUNT", count, "BLOCK", blockMs, "STREAMS", this.key, after)) as
        | [string, [string, string[]][]][]
        | null;
    } catch (error) {
      if (this.closed) return [];
      throw error;
    }
    if (!reply) return [];
    const entries: StreamEntry[] = [];
    for (const [streamId, fields] of reply[0]![1]) {
      const detail = decodeStreamEntry(this.tenant, fields);
      if (detail) entries.push({ streamId, detail });
    }
    return entries;
  }

  /** Ends a pending blocking read at once (the client went away) and frees the connection. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.connection.disconnect();
  }
}

/** Opens a subscription to one tenant's notification stream (its own Redis connection). */
export interface NotificationStreams {
  open(tenant: string): StreamSubscription;
}

/** Subscriptions on connections of their own, copied from the process's client (cluster too). */
export function notificationStreams(redis: RedisClient, prefix: string): NotificationStreams {
  return {
    open: (tenant) => {
      // A blocking XREAD holds its connection, so each subscriber gets one; it needs no scripts.
      const connection = (redis as { duplicate(): RedisClient }).duplicate();
      return new StreamSubscription(connection, prefix, tenant);
    },
  };
}
