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
 * outcomes go in the order they came, `maxWriting` at a time; each also goes when it has waited
 * `maxDelayMs`, or when the gate closes.
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
   * Waits while the consumer is busy, at most `maxWaitMs` (the worker's bound) and `maxDelayMs`.
   * Resolves with the callback to call once the outcome is recorded.
   */
  hold(maxWaitMs: number): Promise<() => void> {
    const wait = Math.min(this.maxDelayMs, maxWaitMs);
    const mayGoNow = this.waiters.size === 0 && this.flowing() && this.writingNow < this.maxWriting;
    if (this.closed || wait <= 0 || mayGoNow || this.waiters.size >= this.maxHeld) {
      return Promise.resolve(this.startWriting());
    }
    const held = new Promise<() => void>((resolve) => {
      const release = () => {
        clearTimeout(timer);
        this.waiters.delete(release);
        resolve(this.startWriting());
      };
      const timer = setTimeout(release, wait);
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

  /** Lets the oldest held outcomes go while the consumer is not busy, `maxWriting` at a time. */
  private pump(): void {
    while (this.waiters.size > 0 && this.writingNow < this.maxWriting && this.flowing()) {
      const [oldest] = this.waiters;
      oldest!();
    }
  }
}
