import type { OutcomeGate, Worker } from "../events/worker.ts";

/**
 * Lets outcome writes trail the handlers while the work queue has a backlog, in the local
 * runtime's worker. One process is the queue's consumer, every handler and the outcome writes
 * (a conditional `UpdateItem` each, about a millisecond of the SDK's CPU here, and twice that of
 * DynamoDB Local's). When thousands of messages are due at once, writing each outcome as soon as
 * its handler returns spends that CPU while later messages wait to start. So while receives come
 * back full (the queue holds more than the consumer takes), a finished handler's outcome waits,
 * and its message stops counting against the consumer's `maxInFlight`: the next message starts.
 * The outcomes go as soon as a receive comes back short (the backlog is gone), when the gate
 * closes, or when they have waited `maxDelayMs`, whichever comes first.
 *
 * What a wait costs, and why it is bounded: the event stays `running` in the index (its run
 * lease) and its message stays in flight until the outcome is written. The worker never asks to
 * hold beyond a point well inside the run lease (`Worker`), so a held outcome never lets the index
 * send a copy of an event that already ran. A crash while outcomes wait is the crash between a
 * handler and its write that exists without the gate: the messages come back and the handlers
 * run again (at least once), the same as when the process dies during those writes.
 *
 * On Lambda nothing trails: the function returns only once its batch's outcomes are written, and
 * no gate is set.
 */
export class TrailingOutcomes implements OutcomeGate {
  /** The gate for `worker` when `trailMs` (config `local.outcomeTrailMs`) allows waits at all. */
  static for(worker: Worker, trailMs: number): TrailingOutcomes | undefined {
    if (trailMs <= 0) return undefined;
    const gate = new TrailingOutcomes(trailMs);
    worker.trailOutcomes(gate);
    return gate;
  }

  private backlogged = false;
  private closed = false;
  private readonly waiters = new Set<() => void>();
  /** The consumer's: called when an outcome starts to wait (its message's slot is free). */
  onHold: (() => void) | undefined;

  /**
   * @param maxDelayMs the longest an outcome waits for the backlog to clear
   * @param maxHeld outcomes held at once; beyond it an outcome is written at once, which bounds the
   *   memory and the messages in flight (`maxInFlight` plus this)
   */
  constructor(
    private readonly maxDelayMs = 5_000,
    private readonly maxHeld = 5_000,
  ) {}

  /** Outcomes waiting now: their handlers are done, their writes not started. */
  get held(): number {
    return this.waiters.size;
  }

  /** The consumer's report after each receive: `true` when it came back full. */
  backlog(full: boolean): void {
    this.backlogged = full;
    if (!full) this.releaseAll();
  }

  /** Waits while there is a backlog, at most `maxWaitMs` (the worker's bound) and `maxDelayMs`. */
  hold(maxWaitMs: number): Promise<void> {
    const wait = Math.min(this.maxDelayMs, maxWaitMs);
    if (!this.backlogged || this.closed || wait <= 0 || this.waiters.size >= this.maxHeld) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const release = () => {
        clearTimeout(timer);
        this.waiters.delete(release);
        resolve();
      };
      const timer = setTimeout(release, wait);
      this.waiters.add(release);
      this.onHold?.();
    });
  }

  /** Writes everything held and holds nothing from now on (the consumer is stopping). */
  close(): void {
    this.closed = true;
    this.releaseAll();
  }

  private releaseAll(): void {
    for (const release of [...this.waiters]) release();
  }
}
