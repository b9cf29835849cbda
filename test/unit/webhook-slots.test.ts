import { describe, expect, it } from "vitest";
import { DependencyUnavailableError, WebhookSlotsBusyError } from "../../shared/handlers/errors.ts";
import { WebhookSlots } from "../../shared/handlers/webhook-slots.ts";

/** A request that stays in flight until `finish` is called; `started` tells whether it began. */
function held<T = string>(value: T) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const state = { started: false };
  return {
    state,
    finish,
    request: async () => {
      state.started = true;
      await done;
      return value;
    },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function eventuallyStarted(state: { started: boolean }) {
  for (let i = 0; i < 200 && !state.started; i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(state.started).toBe(true);
}

describe("WebhookSlots", () => {
  it("lets at most its count of one tenant's requests to one origin run at once, in arrival order", async () => {
    const slots = new WebhookSlots(2);
    const requests = [0, 1, 2, 3].map((i) => held(i));
    const results = requests.map((r) => slots.run("t", "http://a", 10_000, r.request));
    await tick();
    expect(requests.map((r) => r.state.started)).toEqual([true, true, false, false]);
    requests[1]!.finish();
    await tick();
    expect(requests.map((r) => r.state.started)).toEqual([true, true, true, false]);
    requests[0]!.finish();
    await tick();
    expect(requests[3]!.state.started).toBe(true);
    for (const r of requests) r.finish();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3]);
    expect(slots.size).toBe(0);
  });

  it("keeps tenants and origins apart: a tenant whose slots are all held does not hold back another", async () => {
    const slots = new WebhookSlots(1);
    const hanging = held("a");
    const first = slots.run("a", "http://x", 10_000, hanging.request);
    const otherTenant = held("b");
    const otherOrigin = held("a-y");
    const results = [
      slots.run("b", "http://x", 0, otherTenant.request),
      slots.run("a", "http://y", 0, otherOrigin.request),
    ];
    await tick();
    expect([otherTenant.state.started, otherOrigin.state.started]).toEqual([true, true]);
    otherTenant.finish();
    otherOrigin.finish();
    expect(await Promise.all(results)).toEqual(["b", "a-y"]);
    hanging.finish();
    await first;
  });

  it("gives up after the wait it was allowed, with an error that gives the attempt back", async () => {
    const slots = new WebhookSlots(1);
    const holder = held("first");
    const running = slots.run("t", "https://hooks.example", 10_000, holder.request);
    const late = held("late");
    const startedWaiting = performance.now();
    const error = await slots.run("t", "https://hooks.example", 50, late.request).catch((e: unknown) => e);
    expect(performance.now() - startedWaiting).toBeGreaterThanOrEqual(45);
    expect(error).toBeInstanceOf(WebhookSlotsBusyError);
    expect(error).toBeInstanceOf(DependencyUnavailableError);
    expect((error as WebhookSlotsBusyError).message).toContain("https://hooks.example");
    expect(late.state.started).toBe(false);
    // The turn it gave up is handed on: the next waiter runs once the holder is done.
    const next = held("next");
    const after = slots.run("t", "https://hooks.example", 10_000, next.request);
    holder.finish();
    await running;
    await tick();
    expect(next.state.started).toBe(true);
    expect(late.state.started).toBe(false);
    next.finish();
    expect(await after).toBe("next");
    await tick();
    expect(slots.size).toBe(0);
  });

  it("refuses at once, with when to come back, a request whose turn would outlast the wait it may take", async () => {
    const slots = new WebhookSlots(1);
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    // Two requests of about 100 ms teach the pair how long its requests take; a third holds the slot.
    const first = held("first");
    const runs = [slots.run("t", "http://a", 10_000, first.request)];
    runs.push(slots.run("t", "http://a", 10_000, () => sleep(100).then(() => "second")));
    const third = held("third");
    runs.push(slots.run("t", "http://a", 10_000, third.request));
    await sleep(100);
    first.finish();
    await eventuallyStarted(third.state);
    const askedAt = performance.now();
    const refused = await slots.run("t", "http://a", 20, async () => "never").catch((e: unknown) => e);
    // Refused without waiting out its 20 ms: the error says it waited nothing (the timer's says 20).
    expect(performance.now() - askedAt).toBeLessThan(20);
    expect(refused).toBeInstanceOf(WebhookSlotsBusyError);
    expect((refused as WebhookSlotsBusyError).waitedMs).toBe(0);
    // Half a round of about 100 ms is ahead of it.
    expect((refused as WebhookSlotsBusyError).retryAfterMs).toBeGreaterThan(40);
    expect((refused as WebhookSlotsBusyError).retryAfterMs).toBeLessThan(200);
    // One allowed to wait longer than that queues and gets its turn.
    const patient = slots.run("t", "http://a", 5_000, async () => "patient");
    third.finish();
    expect(await patient).toBe("patient");
    expect(await Promise.all(runs)).toEqual(["first", "second", "third"]);
    expect(slots.size).toBe(0);
  });

  it("runs at once on a free slot even with no time to wait, and refuses at once on a full one", async () => {
    const slots = new WebhookSlots(1);
    expect(await slots.run("t", "http://a", 0, async () => "free")).toBe("free");
    expect(await slots.run("t", "http://a", -500, async () => "negative wait")).toBe("negative wait");
    const holder = held("h");
    const running = slots.run("t", "http://a", 0, holder.request);
    await expect(slots.run("t", "http://a", 0, async () => "never")).rejects.toBeInstanceOf(
      WebhookSlotsBusyError,
    );
    holder.finish();
    await running;
  });

  it("frees the slot of a request that fails", async () => {
    const slots = new WebhookSlots(1);
    await expect(
      slots.run("t", "http://a", 0, async () => {
        throw new Error("connection refused");
      }),
    ).rejects.toThrow("connection refused");
    expect(await slots.run("t", "http://a", 0, async () => "next")).toBe("next");
    expect(slots.size).toBe(0);
  });

  it("waits the longest a timer can, not 1 ms, when allowed to wait without end", async () => {
    const slots = new WebhookSlots(1);
    const holder = held("h");
    const running = slots.run("t", "http://a", 10_000, holder.request);
    const waiting = slots.run("t", "http://a", Number.POSITIVE_INFINITY, async () => "waited");
    await new Promise((resolve) => setTimeout(resolve, 20));
    holder.finish();
    await running;
    expect(await waiting).toBe("waited");
  });

  it("refuses a count that is not a positive integer", () => {
    expect(() => new WebhookSlots(0)).toThrow(RangeError);
    expect(() => new WebhookSlots(1.5)).toThrow(RangeError);
  });
});
