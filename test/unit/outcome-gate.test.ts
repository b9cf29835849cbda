import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";

/**
 * The local worker's outcome gate on its own: an outcome waits only while the consumer reports a
 * backlog, and never longer than the worker's bound, the gate's delay, or the gate's life.
 */
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Whether `promise` has settled once pending callbacks and timers up to now have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe("TrailingOutcomes", () => {
  it("lets an outcome go at once when the queue has no backlog", async () => {
    const gate = new TrailingOutcomes(5_000);
    expect(await settled(gate.hold(10_000))).toBe(true);
    gate.backlog(false);
    expect(await settled(gate.hold(10_000))).toBe(true);
    expect(gate.held).toBe(0);
  });

  it("holds outcomes during a backlog and lets them all go when a receive comes back short", async () => {
    const gate = new TrailingOutcomes(5_000);
    const holds: number[] = [];
    gate.onHold = () => holds.push(gate.held);
    gate.backlog(true);
    const waiting = [gate.hold(10_000), gate.hold(10_000), gate.hold(10_000)];
    expect(await settled(Promise.all(waiting))).toBe(false);
    expect(gate.held).toBe(3);
    expect(holds).toEqual([1, 2, 3]);
    gate.backlog(true); // still full: nothing moves
    await vi.advanceTimersByTimeAsync(1_000);
    expect(gate.held).toBe(3);
    gate.backlog(false);
    expect(await settled(Promise.all(waiting))).toBe(true);
    expect(gate.held).toBe(0);
  });

  it("never holds past the worker's bound nor its own delay", async () => {
    const gate = new TrailingOutcomes(2_000);
    gate.backlog(true);
    const short = gate.hold(300);
    const long = gate.hold(60_000);
    await vi.advanceTimersByTimeAsync(299);
    expect(await settled(short)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(short)).toBe(true);
    await vi.advanceTimersByTimeAsync(1_699);
    expect(await settled(long)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(long)).toBe(true);
    // No time left in the run lease: written at once, backlog or not.
    expect(await settled(gate.hold(0))).toBe(true);
    expect(await settled(gate.hold(-50))).toBe(true);
    expect(gate.held).toBe(0);
  });

  it("holds at most maxHeld outcomes; the rest are written at once", async () => {
    const gate = new TrailingOutcomes(5_000, 2);
    gate.backlog(true);
    const first = [gate.hold(10_000), gate.hold(10_000)];
    expect(await settled(gate.hold(10_000))).toBe(true);
    expect(gate.held).toBe(2);
    expect(await settled(Promise.all(first))).toBe(false);
  });

  it("lets everything go when it closes, and holds nothing after", async () => {
    const gate = new TrailingOutcomes(5_000);
    gate.backlog(true);
    const waiting = gate.hold(10_000);
    gate.close();
    expect(await settled(waiting)).toBe(true);
    gate.backlog(true);
    expect(await settled(gate.hold(10_000))).toBe(true);
    expect(gate.held).toBe(0);
  });

  it("is not made for a worker when trailing is off", () => {
    const worker = { trailOutcomes: vi.fn() };
    expect(TrailingOutcomes.for(worker as never, 0)).toBeUndefined();
    expect(worker.trailOutcomes).not.toHaveBeenCalled();
    const gate = TrailingOutcomes.for(worker as never, 3_000);
    expect(gate).toBeInstanceOf(TrailingOutcomes);
    expect(worker.trailOutcomes).toHaveBeenCalledWith(gate);
  });
});
