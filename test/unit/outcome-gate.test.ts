import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";

/**
 * The local worker's outcome gate on its own: an outcome waits only while the consumer reports a
 * backlog or many handlers still run, never longer than the worker's bound, the gate's delay or
 * the gate's life, and held outcomes go oldest first, `maxWriting` at a time.
 */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** The callback `promise` resolved with, once pending callbacks and timers up to now have run. */
async function settled<T>(promise: Promise<T>): Promise<T | undefined> {
  let value: T | undefined;
  void promise.then((v) => {
    value = v;
  });
  await vi.advanceTimersByTimeAsync(0);
  return value;
}

describe("TrailingOutcomes", () => {
  it("lets an outcome go at once when the consumer is not busy, and counts it until it is recorded", async () => {
    const gate = new TrailingOutcomes();
    const recorded = await settled(gate.hold(10_000));
    expect(recorded).toBeTypeOf("function");
    expect(gate.writing).toBe(1);
    recorded!();
    recorded!(); // a second call changes nothing
    expect(gate.writing).toBe(0);
    expect(gate.held).toBe(0);
  });

  it("holds outcomes during a backlog, then lets them go oldest first, maxWriting at a time", async () => {
    const gate = new TrailingOutcomes({ maxWriting: 2 });
    const holds: number[] = [];
    gate.onHold = () => holds.push(gate.held);
    gate.backlog(true);
    const order: number[] = [];
    const waiting = [0, 1, 2, 3].map((i) =>
      gate.hold(10_000).then((recorded) => {
        order.push(i);
        return recorded;
      }),
    );
    await vi.advanceTimersByTimeAsync(1_000);
    expect(gate.held).toBe(4);
    expect(holds).toEqual([1, 2, 3, 4]);
    gate.backlog(true); // still full: nothing moves
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([]);
    gate.backlog(false);
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([0, 1]);
    expect(gate.writing).toBe(2);
    (await waiting[0]!)();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([0, 1, 2]);
    (await waiting[1]!)();
    (await waiting[2]!)();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(gate.held).toBe(0);
  });

  it("holds outcomes while many handlers still run, backlog or not", async () => {
    const gate = new TrailingOutcomes({ runningLowWater: 2 });
    let running = 10;
    gate.running = () => running;
    const first = gate.hold(10_000);
    expect(await settled(first)).toBeUndefined();
    expect(gate.held).toBe(1);
    running = 3;
    gate.backlog(false); // the next receive's report
    expect(await settled(first)).toBeUndefined();
    running = 2; // at the low-water mark
    gate.backlog(false);
    expect(await settled(first)).toBeTypeOf("function");
  });

  it("lets held outcomes go when the last busy handler's own outcome arrives, oldest first", async () => {
    const gate = new TrailingOutcomes({ runningLowWater: 0 });
    let running = 2;
    gate.running = () => running;
    const order: string[] = [];
    void gate.hold(10_000).then(() => order.push("first"));
    running = 1;
    void gate.hold(10_000).then(() => order.push("second"));
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([]);
    running = 0; // the last handler returned; its outcome is the next hold, no receive reports
    void gate.hold(10_000).then(() => order.push("third"));
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual(["first", "second", "third"]);
  });

  it("never holds past the worker's bound nor its own delay", async () => {
    const gate = new TrailingOutcomes({ maxDelayMs: 2_000 });
    gate.backlog(true);
    const short = gate.hold(300);
    const long = gate.hold(60_000);
    await vi.advanceTimersByTimeAsync(299);
    expect(await settled(short)).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(short)).toBeTypeOf("function");
    await vi.advanceTimersByTimeAsync(1_699);
    expect(await settled(long)).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(long)).toBeTypeOf("function");
    // No time left in the run lease: written at once, backlog or not.
    expect(await settled(gate.hold(0))).toBeTypeOf("function");
    expect(await settled(gate.hold(-50))).toBeTypeOf("function");
    expect(gate.held).toBe(0);
  });

  it("lets overdue outcomes go maxWriting at a time, oldest first, and each at the worker's bound", async () => {
    const gate = new TrailingOutcomes({ maxDelayMs: 1_000, maxWriting: 2 });
    gate.backlog(true); // busy throughout: only the delay and the bound let anything go
    const order: number[] = [];
    const recorded = new Map<number, () => void>();
    // Four with room to spare in the run lease, then one whose bound is 1.5 s away.
    for (const [i, bound] of [
      [0, 60_000],
      [1, 60_000],
      [2, 60_000],
      [3, 60_000],
      [4, 1_500],
    ] as const) {
      void gate.hold(bound).then((done) => {
        order.push(i);
        recorded.set(i, done);
      });
    }
    await vi.advanceTimersByTimeAsync(999);
    expect(order).toEqual([]);
    await vi.advanceTimersByTimeAsync(1); // all five overdue in the same instant
    expect(order).toEqual([0, 1]);
    expect(gate.writing).toBe(2);
    expect(gate.held).toBe(3);
    recorded.get(0)!();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([0, 1, 2]); // the next overdue, backlog or not
    await vi.advanceTimersByTimeAsync(500); // event 4's bound: it goes past the cap
    expect(order).toEqual([0, 1, 2, 4]);
    expect(gate.writing).toBe(3);
    recorded.get(1)!();
    recorded.get(2)!();
    recorded.get(4)!();
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([0, 1, 2, 4, 3]);
    expect(gate.held).toBe(0);
  });

  it("holds at most maxHeld outcomes; the rest are written at once", async () => {
    const gate = new TrailingOutcomes({ maxHeld: 2 });
    gate.backlog(true);
    const first = [gate.hold(10_000), gate.hold(10_000)];
    expect(await settled(gate.hold(10_000))).toBeTypeOf("function");
    expect(gate.held).toBe(2);
    expect(await settled(Promise.race(first))).toBeUndefined();
  });

  it("lets everything go when it closes, and holds nothing after", async () => {
    const gate = new TrailingOutcomes({ maxWriting: 1 });
    gate.backlog(true);
    const waiting = [gate.hold(10_000), gate.hold(10_000)];
    gate.close();
    expect(await settled(Promise.all(waiting))).toHaveLength(2);
    gate.backlog(true);
    expect(await settled(gate.hold(10_000))).toBeTypeOf("function");
    expect(gate.held).toBe(0);
  });

  it("is not made for a worker when trailing is off", () => {
    const worker = { trailOutcomes: vi.fn(), running: 7 };
    expect(TrailingOutcomes.for(worker as never, 0, 100)).toBeUndefined();
    expect(worker.trailOutcomes).not.toHaveBeenCalled();
    const gate = TrailingOutcomes.for(worker as never, 3_000, 2);
    expect(gate).toBeInstanceOf(TrailingOutcomes);
    // It holds four outcomes per slot of the consumer, no more.
    gate!.backlog(true);
    for (let i = 0; i < 9; i++) void gate!.hold(10_000);
    expect(gate!.held).toBe(8);
    gate!.close();
    expect(worker.trailOutcomes).toHaveBeenCalledWith(gate);
    expect(gate!.running()).toBe(7); // the worker's count of handlers running
  });
});
