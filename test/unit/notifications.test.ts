import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../shared/logger.ts";
import {
  chunk,
  detailTypeOf,
  EventBridgeSink,
  entrySize,
  PUT_EVENTS_MAX_BYTES,
} from "../../shared/notifications/eventbridge.ts";
import { detailOf, TRANSITIONS, type TransitionNotice } from "../../shared/notifications/model.ts";
import { BufferedNotifier, type NotificationSink } from "../../shared/notifications/notifier.ts";
import { notify } from "../../shared/notifications/publish.ts";
import {
  decodeStreamEntry,
  encodeStreamEntry,
  LEGACY_FIELD,
} from "../../shared/notifications/stream-entry.ts";

const notice = (i: number, extra: Partial<TransitionNotice> = {}): TransitionNotice => ({
  transition: "succeeded",
  tenant: "acme",
  id: `e${i}`,
  type: "email.send",
  attempt: 1,
  status: "succeeded",
  time: Date.UTC(2026, 0, 1) + i,
  ...extra,
});

const eventBridge = mockClient(EventBridgeClient);
beforeEach(() => eventBridge.reset());

describe("EventBridge sink", () => {
  it("puts one entry per notice, detail-type per transition, in requests of at most 10 entries", async () => {
    eventBridge.on(PutEventsCommand).resolves({ FailedEntryCount: 0, Entries: [] });
    const sink = new EventBridgeSink(
      TRANSITIONS,
      new EventBridgeClient({}),
      "my-bus",
      "hourglass",
      silentLogger,
    );
    const failed = await sink.deliver(Array.from({ length: 23 }, (_, i) => notice(i)));
    expect(failed).toBe(0);
    const calls = eventBridge.commandCalls(PutEventsCommand);
    expect(calls.map((c) => c.args[0].input.Entries!.length)).toEqual([10, 10, 3]);
    const first = calls[0]!.args[0].input.Entries![0]!;
    expect(first).toMatchObject({
      EventBusName: "my-bus",
      Source: "hourglass",
      DetailType: "Event Succeeded",
    });
    expect(JSON.parse(first.Detail!)).toEqual({
      transition: "succeeded",
      id: "e0",
      tenant: "acme",
      type: "email.send",
      attempt: 1,
      status: "succeeded",
      time: "2026-01-01T00:00:00.000Z",
    });
  });

  it("names a detail-type for every transition", () => {
    expect(TRANSITIONS.map((transition) => detailTypeOf(notice(0, { transition })))).toEqual([
      "Event Scheduled",
      "Event Rescheduled",
      "Event Dispatched",
      "Event Started",
      "Event Succeeded",
      "Event Retrying",
      "Event Dead",
      "Event Cancelled",
      "Event Held",
    ]);
  });

  it("keeps every request within 256 KB", () => {
    const big = "x".repeat(60_000);
    const entries: PutEventsRequestEntry[] = Array.from({ length: 9 }, (_, i) => ({
      Source: "hourglass",
      DetailType: "Event Dead",
      Detail: JSON.stringify({ i, error: big }),
      Time: new Date(),
    }));
    const requests = chunk(entries);
    expect(requests.length).toBeGreaterThan(2);
    for (const request of requests) {
      expect(request.reduce((sum, e) => sum + entrySize(e), 0)).toBeLessThanOrEqual(PUT_EVENTS_MAX_BYTES);
    }
    expect(requests.flat()).toEqual(entries);
  });

  it("sends again only the entries EventBridge refused (FailedEntryCount), then counts what stays refused", async () => {
    eventBridge
      .on(PutEventsCommand)
      .resolvesOnce({
        FailedEntryCount: 2,
        Entries: [
          { EventId: "1" },
          { ErrorCode: "ThrottlingException" },
          { EventId: "3" },
          { ErrorCode: "InternalFailure" },
        ],
      })
      .resolvesOnce({ FailedEntryCount: 1, Entries: [{ EventId: "2" }, { ErrorCode: "InternalFailure" }] })
      .resolves({ FailedEntryCount: 1, Entries: [{ ErrorCode: "InternalFailure" }] });
    const sink = new EventBridgeSink(
      TRANSITIONS,
      new EventBridgeClient({}),
      "bus",
      "hourglass",
      silentLogger,
      async () => {},
    );
    const failed = await sink.deliver([0, 1, 2, 3].map((i) => notice(i)));
    const calls = eventBridge.commandCalls(PutEventsCommand);
    const ids = calls.map((c) => c.args[0].input.Entries!.map((e) => JSON.parse(e.Detail!).id));
    expect(ids).toEqual([["e0", "e1", "e2", "e3"], ["e1", "e3"], ["e3"], ["e3"]]);
    expect(failed).toBe(1);
  });

  it("retries a request that failed as a whole, then throws for the notifier to count", async () => {
    eventBridge.on(PutEventsCommand).rejects(new Error("network down"));
    const sink = new EventBridgeSink(
      TRANSITIONS,
      new EventBridgeClient({}),
      "bus",
      "hourglass",
      silentLogger,
      async () => {},
    );
    await expect(sink.deliver([notice(0)])).rejects.toThrow("network down");
    expect(eventBridge.commandCalls(PutEventsCommand)).toHaveLength(4);
  });
});

describe("buffered notifier", () => {
  const collecting = () => {
    const batches: TransitionNotice[][] = [];
    const sink: NotificationSink = {
      name: "memory",
      async deliver(notices) {
        batches.push([...notices]);
        return 0;
      },
    };
    return { sink, batches };
  };

  it("delivers in publish order, in batches, and publish returns before any delivery", async () => {
    const { sink, batches } = collecting();
    const notifier = new BufferedNotifier({
      sinks: [sink],
      logger: silentLogger,
      flushMs: 5,
      batchSize: 4,
      maxBuffered: 1_000,
    });
    for (let i = 0; i < 10; i++) notifier.publish(notice(i));
    expect(batches).toEqual([]); // nothing delivered inside publish
    await notifier.flush();
    expect(batches.map((b) => b.length)).toEqual([4, 4, 2]);
    expect(batches.flat().map((n) => n.id)).toEqual(Array.from({ length: 10 }, (_, i) => `e${i}`));
    expect(notifier.stats()).toEqual({ published: 10, failed: 0, dropped: 0 });
  });

  it("delivers on its timer without a flush", async () => {
    const { sink, batches } = collecting();
    const notifier = new BufferedNotifier({
      sinks: [sink],
      logger: silentLogger,
      flushMs: 5,
      batchSize: 100,
      maxBuffered: 1_000,
    });
    notifier.publish(notice(1));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(batches.flat().map((n) => n.id)).toEqual(["e1"]);
  });

  it("counts a failing sink and never throws into the publisher; a full buffer drops the oldest", async () => {
    const failures: number[] = [];
    const broken: NotificationSink = {
      name: "broken",
      deliver: async () => {
        throw new Error("down");
      },
    };
    const notifier = new BufferedNotifier({
      sinks: [broken],
      logger: silentLogger,
      flushMs: 10_000,
      batchSize: 1_000,
      maxBuffered: 5,
      onFailure: (n) => failures.push(n),
    });
    for (let i = 0; i < 8; i++) expect(() => notifier.publish(notice(i))).not.toThrow();
    await expect(notifier.flush()).resolves.toBeUndefined();
    expect(notifier.stats()).toEqual({ published: 0, failed: 5, dropped: 3 });
    expect(failures.reduce((a, b) => a + b, 0)).toBe(8);
  });

  it("keeps the newest notices, in order, when a flood overfills the buffer", async () => {
    const { sink, batches } = collecting();
    const notifier = new BufferedNotifier({
      sinks: [sink],
      logger: silentLogger,
      flushMs: 10_000,
      batchSize: 30,
      maxBuffered: 100,
    });
    // Published in one go, so nothing is delivered before the buffer has overflowed many times.
    for (let i = 0; i < 5_000; i++) notifier.publish(notice(i));
    await notifier.flush();
    expect(batches.map((b) => b.length)).toEqual([30, 30, 30, 10]);
    expect(batches.flat().map((n) => n.id)).toEqual(Array.from({ length: 100 }, (_, i) => `e${4_900 + i}`));
    expect(notifier.stats()).toEqual({ published: 100, failed: 0, dropped: 4_900 });
    // The buffer works on after a flood: a later notice is delivered alone.
    notifier.publish(notice(9_999));
    await notifier.flush();
    expect(batches.at(-1)!.map((n) => n.id)).toEqual(["e9999"]);
  });

  it("publishes during slow deliveries, with overflows between them: each notice once or dropped, in order", async () => {
    const delivered: string[] = [];
    let release: (() => void) | undefined;
    const slow: NotificationSink = {
      name: "slow",
      deliver: async (notices) => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        delivered.push(...notices.map((n) => n.id));
        return 0;
      },
    };
    const notifier = new BufferedNotifier({
      sinks: [slow],
      logger: silentLogger,
      flushMs: 10_000,
      batchSize: 7,
      maxBuffered: 20,
    });
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    let next = 0;
    // Rounds of publishes (some past the buffer) while a batch is in flight, then that batch ends.
    for (const burst of [3, 9, 30, 1, 25, 7, 0, 40, 2]) {
      for (let i = 0; i < burst; i++) notifier.publish(notice(next++));
      await settle();
      release?.();
      release = undefined;
      await settle();
    }
    const done = notifier.flush();
    for (let i = 0; i < 20 && release === undefined; i++) await settle();
    while (release) {
      const r: () => void = release;
      release = undefined;
      r();
      for (let i = 0; i < 5 && release === undefined; i++) await settle();
    }
    await done;
    const ids = delivered.map((id) => Number(id.slice(1)));
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const { published, dropped, failed } = notifier.stats();
    expect({ published, failed, total: published + dropped }).toEqual({
      published: ids.length,
      failed: 0,
      total: next,
    });
    // The newest are never the ones dropped.
    expect(ids.at(-1)).toBe(next - 1);
  });

  it("fills in missing types at flush time, before the sinks see the batch", async () => {
    const { sink, batches } = collecting();
    const notifier = new BufferedNotifier({
      sinks: [sink],
      logger: silentLogger,
      flushMs: 5,
      batchSize: 10,
      maxBuffered: 100,
      resolveTypes: async (notices) => {
        for (const n of notices) n.type ??= "looked.up";
      },
    });
    notify({ notifier, clock: () => 1 }, "rescheduled", { tenant: "acme", id: "x", attempt: 0, runAt: 5 });
    await notifier.flush();
    expect(batches[0]![0]).toMatchObject({ type: "looked.up", status: "scheduled", time: 1, runAt: 5 });
  });

  it("describes an occurrence with its schedule, and held events with why", () => {
    const detail = detailOf(
      notice(0, {
        id: "nightly@2026-03-29T01:30:00Z",
        transition: "held",
        status: "scheduled",
        heldBy: "rate",
      }),
    );
    expect(detail).toMatchObject({ scheduleId: "nightly", heldBy: "rate", transition: "held" });
    expect(detailOf(notice(0)).scheduleId).toBeUndefined();
  });
});

describe("stream entries (the tenant's capped Redis stream)", () => {
  const cases: TransitionNotice[] = [
    notice(0, { transition: "scheduled", status: "scheduled", attempt: 0, runAt: Date.UTC(2026, 0, 2) }),
    notice(1, {
      transition: "retrying",
      status: "retrying",
      error: "boom: 500",
      runAt: Date.UTC(2026, 0, 3),
    }),
    notice(2, {
      transition: "held",
      status: "retrying",
      heldBy: "concurrency",
      id: "nightly@2026-03-29T01:30:00Z",
    }),
    notice(3, { transition: "dispatched", status: "dispatched", type: undefined }),
    notice(4),
  ];

  it("reads back every notice as the detail subscribers get, in the same key order", () => {
    for (const n of cases) {
      const detail = decodeStreamEntry(n.tenant, encodeStreamEntry(n));
      expect(JSON.stringify(detail)).toBe(JSON.stringify(detailOf(n)));
    }
  });

  it("stores no tenant, no status the transition implies, and no JSON", () => {
    const fields = encodeStreamEntry(cases[0]!);
    expect(fields.filter((_, i) => i % 2 === 0)).toEqual(["t", "i", "y", "a", "m", "r"]);
    expect(fields.join("")).not.toContain("acme");
    expect(encodeStreamEntry(cases[2]!)).toContain("s");
  });

  it("reads entries written in the layout before (the detail as JSON in one field), and skips unreadable ones", () => {
    const legacy = detailOf(cases[1]!);
    expect(decodeStreamEntry("acme", [LEGACY_FIELD, JSON.stringify(legacy)])).toEqual(legacy);
    expect(decodeStreamEntry("acme", ["t", "exploded", "i", "x", "m", "1"])).toBeUndefined();
    expect(decodeStreamEntry("acme", ["x", "y"])).toBeUndefined();
  });
});
