import type { RedisClient } from "../engine/scripts.ts";
import type { Logger } from "../logger.ts";
import { latenessBucket } from "./histogram.ts";
import { field, HOUR_MS, hourOf, metricsKey, RETAIN_MS, SERIES_CODE } from "./keys.ts";
import { entry } from "./maps.ts";

export type FinishedOutcome = "succeeded" | "retrying" | "givenBack" | "dead" | "dropped";

/** What the engine reports; every call is synchronous and cheap, so a hook costs one line. */
export interface EngineMetrics {
  created(tenant: string, type: string): void;
  started(tenant: string, type: string, lateMs: number): void;
  /**
   * The outcome of a handler run: `retrying` and `dead` count as failed; `givenBack` is a retry
   * that did not count against maxAttempts (see WorkResult.givenBack); `dropped` is not a run.
   */
  finished(tenant: string, type: string, outcome: FinishedOutcome): void;
}

/**
 * Counts in memory and writes them to Redis at most once a second, one pipeline per tenant. A
 * burst of 20k events thus costs a handful of HINCRBYs (one per minute, type and bucket), not one
 * write per event, and never sits in the path of a start or an ack. Metrics are best effort: a
 * failed write is logged and dropped, it never fails an event.
 */
export class MetricsRecorder implements EngineMetrics {
  /** tenant → key → field → increment */
  private pending = new Map<string, Map<string, Map<string, number>>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly logger: Logger,
    private readonly clock: () => number = Date.now,
    private readonly flushEveryMs = 1_000,
  ) {}

  created(tenant: string, type: string): void {
    this.add(tenant, type, SERIES_CODE.created);
  }

  started(tenant: string, type: string, lateMs: number): void {
    this.add(tenant, type, SERIES_CODE.started);
    this.add(tenant, type, `l${latenessBucket(lateMs)}`);
  }

  finished(tenant: string, type: string, outcome: FinishedOutcome): void {
    if (outcome === "succeeded") this.add(tenant, type, SERIES_CODE.succeeded);
    else if (outcome === "givenBack") this.add(tenant, type, SERIES_CODE.givenBack);
    else if (outcome !== "dropped") this.add(tenant, type, SERIES_CODE.failed);
  }

  /** Writes what is buffered; resolves once it is in Redis (or the write failed and was logged). */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = new Map();
    if (batch.size === 0) return this.flushing;
    this.flushing = this.flushing.then(() => this.write(batch));
    return this.flushing;
  }

  private add(tenant: string, type: string, code: string): void {
    const now = this.clock();
    const key = metricsKey(this.prefix, tenant, hourOf(now));
    const fields = entry(
      entry(this.pending, tenant, () => new Map()),
      key,
      () => new Map<string, number>(),
    );
    const name = field(now, type, code);
    fields.set(name, (fields.get(name) ?? 0) + 1);
    // unref: a process that is otherwise done does not wait for its last second of metrics.
    this.timer ??= setTimeout(() => void this.flush(), this.flushEveryMs).unref();
  }

  private async write(batch: Map<string, Map<string, Map<string, number>>>): Promise<void> {
    // One pipeline per tenant: its keys share a hash tag, so the pipeline stays on one slot.
    await Promise.all(
      [...batch.values()].map(async (keys) => {
        const pipeline = this.redis.pipeline();
        for (const [key, fields] of keys) {
          for (const [name, count] of fields) pipeline.hincrby(key, name, count);
          const hour = Number(key.slice(key.lastIndexOf(":") + 1));
          pipeline.pexpireat(key, hour * HOUR_MS + RETAIN_MS);
        }
        try {
          const replies = (await pipeline.exec()) ?? [];
          const failed = replies.find(([error]) => error);
          if (failed) throw failed[0];
        } catch (error) {
          this.logger.warn("metrics write failed; these counts are lost", { error: String(error) });
        }
      }),
    );
  }
}
