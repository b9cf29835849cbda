import type { OutcomeGate, Worker } from "../events/worker.ts";

/** Outcomes `TrailingOutcomes.for` lets wait per slot of the consumer's `maxInFlight`. */
const HELD_PER_SLOT = 4;

/** What the gate is tuned by; every field has a default. */
export interface TrailingOutcomesOptions {
  /**
   * The longest an outcome waits, whatever the queue does.
   * @default 5_000
   */
  readonly maxDelayMs?: number;
  /**
   * Outcomes held at once; beyond it an outcome is written at once, which bounds the memory and
   * the messages in flight.
   * @default 5_000
   */
  readonly maxHeld?: number;
  /**
   * Outcomes being written at once once they flow (the SDK's sockets: more only queue inside it,
   * after it has already spent the CPU to build and sign them).
   * @default 32
   */
  readonly maxWriting?: number;
  /**
   * Outcomes wait while more handlers than this run (not counting messages that wait for their
   * due time), so the handlers in flight (a burst of webhooks being sent) finish before the
   * writes take the CPU.
   * @default 32
   */
  readonly runningLowWater?: number;
}

/**
 * Lets outcome writes trail the handlers while the work queue has a backlog, in the local
 * runtime's worker. One process is the queue's consumer, every handler and the outcome writes
 * (a conditional `UpdateItem` each, about a millisecond of the SDK's CPU here, and twice that of
 * DynamoDB Local's). When thousands of messages are due at once, writing each outcome as soon as
 * its handler returns spends that CPU while later messages wait to start. So while receives come
 * back full (the queue holds more than the consumer takes) or many handlers still run, a finished
 * handler's outcome waits, and its message stops counting against the consumer's `maxInFlight`:
 * the next message starts. Once the backlog is gone and the handlers have (nearly) finished, the
 * outcomes go in the order they came, `maxWriting` at a time. One that has waited `maxDelayMs`
 * goes next whatever the queue does, still `maxWriting` at a time: a burst's outcomes come due
 * within the same second, and letting them all go at once (thousands of writes built, signed and
 * queued behind the SDK's sockets together) stalled the burst's last receives for ten seconds and
 * more (docs/benchmarks.md). Only the worker's bound, well inside the run lease, lets an outcome go
 * past the cap, and so does closing the gate.
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
  static for(worker: Worker, trailMs: number, maxInFlight: number): TrailingOutcomes | undefined {
    if (trailMs <= 0) return undefined;
    // Four times as many held as running: enough for a burst of four times the consumer's slots
    // (2,000 webhooks on two workers of 500) to start before any write. A crash during a backlog
    // then runs again up to five times the handlers it would have without the gate, each of
    // which came back unrecorded either way (at least once).
    const gate = new TrailingOutcomes({ maxDelayMs: trailMs, maxHeld: HELD_PER_SLOT * maxInFlight });
    gate.running = () => worker.running;
    worker.trailOutcomes(gate);
    return gate;
  }

  private backlogged = false;
  private closed = false;
  /** Held outcomes, oldest first (a Set iterates in insertion order). */
  private readonly waiters = new Set<() => void>();
  /** The held outcomes that have waited `maxDelayMs`, oldest first: they go before the others. */
  private readonly overdue = new Set<() => void>();
  private writingNow = 0;
  private readonly maxDelayMs: number;
  private readonly maxHeld: number;
  private readonly maxWriting: number;
  private readonly runningLowWater: number;
  /** The consumer's: called when an outcome starts to wait (its message's slot is free). */
  onHold: (() => void) | undefined;
  /** Handlers running now (the worker's count; `for` wires it). */
  running: () => number = () => 0;

  constructor(options: TrailingOutcomesOptions = {}) {
    this.maxDelayMs = options.maxDelayMs ?? 5_000;
    this.maxHeld = options.maxHeld ?? 5_000;
    this.maxWriting = options.maxWriting ?? 32;
    this.runningLowWater = options.runningLowWater ?? 32;
  }

  /** Outcomes waiting now: their handlers are done, their writes not started. */
  get held(): number {
    return this.waiters.size;
  }

  /** Outcomes let go and not yet recorded. */
  get writing(): number {
    return this.writingNow;
  }

  /** The consumer's report after each receive: `true` when it came back full. */
  backlog(full: boolean): void {
    this.backlogged = full;
    this.pump();
  }

  /**
   * Waits while the consumer is busy, at most `maxWaitMs` (the worker's bound); after `maxDelayMs`
   * it goes among the first, within `maxWriting`. Resolves with the callback to call once the
   * outcome is recorded.
   */
  hold(maxWaitMs: number): Promise<() => void> {
    const due = Math.min(this.maxDelayMs, maxWaitMs);
    const mayGoNow = this.waiters.size === 0 && this.flowing() && this.writingNow < this.maxWriting;
    if (this.closed || due <= 0 || mayGoNow || this.waiters.size >= this.maxHeld) {
      return Promise.resolve(this.startWriting());
    }
    const held = new Promise<() => void>((resolve) => {
      const release = () => {
        clearTimeout(timer);
        this.waiters.delete(release);
        this.overdue.delete(release);
        resolve(this.startWriting());
      };
      // Past its delay it joins the overdue, which go first but within the cap; at the worker's
      // bound it goes whatever else is being written.
      let timer = setTimeout(() => {
        if (due >= maxWaitMs) return release();
        this.overdue.add(release);
        timer = setTimeout(release, maxWaitMs - due);
        this.pump();
      }, due);
      this.waiters.add(release);
      this.onHold?.();
    });
    // This handler's end may be what brought the running count down to the low-water mark.
    this.pump();
    return held;
  }

  /** Holds again after a `close` (the consumer started again). */
  open(): void {
    this.closed = false;
  }

  /** Writes everything held and holds nothing until `open` (the consumer is stopping). */
  close(): void {
    this.closed = true;
    for (const release of [...this.waiters]) release();
  }

  /** No backlog, and few enough handlers running that the writes may have the CPU. */
  private flowing(): boolean {
    if (this.closed) return true;
    return !this.backlogged && this.running() <= this.runningLowWater;
  }

  private startWriting(): () => void {
    this.writingNow++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.writingNow--;
      this.pump();
    };
  }

  /**
   * Lets held outcomes go, `maxWriting` at a time: the overdue ones whatever the consumer does,
   * then, while it is not busy, the oldest of the others.
   */
  private pump(): void {
    while (this.waiters.size > 0 && this.writingNow < this.maxWriting) {
      const [next] = this.overdue.size > 0 ? this.overdue : this.flowing() ? this.waiters : [];
      if (!next) return;
      next();
    }
  }
}
