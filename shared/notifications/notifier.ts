import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Transition, TransitionNotice } from "./model.ts";

/**
 * Where the engine hands transitions. `publish` only appends to a buffer: it never waits, never
 * throws and never fails the event it describes. Delivery happens in batches, off the event's path.
 */
export interface Notifier {
  /** False for the no-op notifier: transition points may skip building notices. */
  readonly enabled: boolean;
  publish(notice: TransitionNotice): void;
  /** Delivers what is buffered (Lambda calls this before the process freezes). Never throws. */
  flush(): Promise<void>;
  stats(): NotifierStats;
  close(): Promise<void>;
}

export interface NotifierStats {
  /** Notices delivered to every sink. */
  readonly published: number;
  /** Notices a sink refused or could not be reached for (logged). */
  readonly failed: number;
  /** Notices dropped because the buffer was full (the sinks were down for long). */
  readonly dropped: number;
}

/** One destination: the per-tenant Redis stream, an EventBridge bus. Throws on failure. */
export interface NotificationSink {
  readonly name: string;
  /** The transitions this sink takes; every one when undefined. */
  readonly transitions?: ReadonlySet<Transition>;
  /** Delivers a batch; returns how many notices it could not deliver (it logs why). */
  deliver(notices: readonly TransitionNotice[]): Promise<number>;
}

export const NO_NOTIFIER: Notifier = {
  enabled: false,
  publish() {},
  async flush() {},
  stats: () => ({ published: 0, failed: 0, dropped: 0 }),
  async close() {},
};

export interface BufferedNotifierOptions {
  readonly sinks: readonly NotificationSink[];
  readonly logger: Logger;
  /**
   * How long a notice may wait for its batch. Undefined: no timer, only a full batch or `flush()`
   * delivers, as on Lambda, where the function flushes when the invocation ends: a timer firing
   * mid-invocation would split its transitions over more requests than they fill.
   */
  readonly flushMs: number | undefined;
  /** A batch this big is delivered at once, without waiting for the timer. */
  readonly batchSize: number;
  /** At most this many notices wait; beyond it the oldest are dropped and counted. */
  readonly maxBuffered: number;
  /** Fills in the type of notices published without one, in one lookup per batch. */
  readonly resolveTypes?: (notices: readonly TransitionNotice[]) => Promise<void>;
  /** Called with the number of notices that could not be delivered (a CloudWatch metric on AWS). */
  readonly onFailure?: (count: number) => void;
}

/**
 * Buffers notices and delivers them in batches, one batch at a time, so notices reach every sink
 * in the order they were published. A failing sink is logged and counted, never retried forever
 * and never allowed to grow the buffer without bound.
 */
export class BufferedNotifier implements Notifier {
  readonly enabled = true;
  /** Buffered notices are `buffer[head..]`: the ones before `head` are delivered or dropped. */
  private buffer: TransitionNotice[] = [];
  private head = 0;
  /** A delivery right away is armed (a full batch is waiting). */
  private immediate = false;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private counts = { published: 0, failed: 0, dropped: 0 };
  /** The transitions some sink takes; undefined: every one. */
  private readonly wanted: ReadonlySet<Transition> | undefined;

  constructor(private readonly options: BufferedNotifierOptions) {
    const sets = options.sinks.map((sink) => sink.transitions);
    this.wanted = sets.some((set) => set === undefined)
      ? undefined
      : new Set(sets.flatMap((set) => [...(set ?? [])]));
  }

  publish(notice: TransitionNotice): void {
    // A transition no sink takes is never buffered, looked up or sent.
    if (this.wanted && !this.wanted.has(notice.transition)) return;
    this.buffer.push(notice);
    if (this.buffer.length - this.head > this.options.maxBuffered) {
      // The oldest go: moving the head is O(1), where splicing the front of a full buffer on
      // every publish made a flood of notices quadratic.
      const excess = this.buffer.length - this.head - this.options.maxBuffered;
      this.head += excess;
      // Dropped notices leave the array once they outnumber the kept ones: amortized O(1) too.
      if (this.head > this.options.maxBuffered) this.compact();
      this.counts.dropped += excess;
      this.options.onFailure?.(excess);
    }
    if (this.buffer.length - this.head >= this.options.batchSize) {
      // Once: re-arming a timer on every publish of a full batch cost more than the publish.
      if (!this.immediate) {
        this.immediate = true;
        this.schedule(0);
      }
    } else if (!this.timer && this.options.flushMs !== undefined) {
      this.schedule(this.options.flushMs);
    }
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.immediate = false;
      void this.flush();
    }, delayMs);
    // A pending batch never keeps a process alive; close() and Lambda's flush() deliver it.
    this.timer.unref();
  }

  /** Takes up to `n` of the oldest buffered notices. */
  private take(n: number): TransitionNotice[] {
    const batch = this.buffer.slice(this.head, this.head + n);
    this.head += batch.length;
    if (this.head >= this.buffer.length) {
      this.buffer = [];
      this.head = 0;
    } else if (this.head > this.options.batchSize && this.head * 2 > this.buffer.length) {
      this.compact();
    }
    return batch;
  }

  private compact(): void {
    this.buffer = this.buffer.slice(this.head);
    this.head = 0;
  }

  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.immediate = false;
    }
    // One delivery at a time, in publish order; each flush takes what is buffered when it runs.
    this.chain = this.chain.then(() => this.deliverBuffered());
    return this.chain;
  }

  private async deliverBuffered(): Promise<void> {
    while (this.buffer.length > this.head) {
      const batch = this.take(this.options.batchSize);
      try {
        if (this.options.resolveTypes && batch.some((n) => n.type === undefined))
          await this.options.resolveTypes(batch);
      } catch (error) {
        // Without its type a notice is still worth delivering: the rest of it is right.
        this.options.logger.warn("notification types could not be looked up", { error: describe(error) });
      }
      let failed = 0;
      for (const sink of this.options.sinks) {
        const taken = sink.transitions;
        const notices = taken ? batch.filter((notice) => taken.has(notice.transition)) : batch;
        if (notices.length === 0) continue;
        try {
          failed = Math.max(failed, await sink.deliver(notices));
        } catch (error) {
          failed = Math.max(failed, notices.length);
          this.options.logger.warn("notifications not delivered", {
            sink: sink.name,
            count: notices.length,
            error: describe(error),
          });
        }
      }
      this.counts.published += batch.length - failed;
      if (failed > 0) {
        this.counts.failed += failed;
        this.options.onFailure?.(failed);
      }
    }
  }

  stats(): NotifierStats {
    return { ...this.counts };
  }

  async close(): Promise<void> {
    await this.flush();
  }
}

export function describe(error: unknown): string {
  return describeError(error, Number.POSITIVE_INFINITY);
}
