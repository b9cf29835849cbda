import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { InProcessTransport } from "../../shared/transport/memory.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * Admission in the engine-only mode (journal off): type limits need DynamoDB, so only the
 * deployment's cap on a tenant's running events can hold an event back. Without that cap the
 * worker skips admission; with it, the cap holds.
 */
const spans: { id: string; start: number; end: number }[] = [];
const slow = defineHandler("test.engineflow", z.object({}), async (_payload, context) => {
  const span = { id: context.id, start: Date.now(), end: 0 };
  spans.push(span);
  await sleep(200);
  span.end = Date.now();
});

let hg: TestHourglass | undefined;
afterEach(async () => {
  await hg?.destroy();
  hg = undefined;
  spans.length = 0;
});

async function runThree(env: Record<string, string>, tenant: string) {
  // Due within the look-ahead, so each create hands its event to the in-process transport at
  // once, and the worker runs it (held back events are parked, and the ticks release them).
  const work: Promise<unknown>[] = [];
  const engineHg: TestHourglass = await testHourglass(
    { HOURGLASS_JOURNAL: "false", ...env },
    {
      handlers: [slow],
      transport: () => new InProcessTransport((message) => work.push(engineHg.worker.process(message))),
    },
  );
  hg = engineHg;
  const ticking = setInterval(() => void engineHg.dispatcher.tick(50).catch(() => {}), 100);
  try {
    await hg.events.scheduleBatch(
      tenant,
      ["a", "b", "c"].map((id) => ({ id, type: "test.engineflow", payload: {}, delaySeconds: 1 })),
    );
    await eventually(
      async () => (spans.filter((s) => s.end > 0).length === 3 ? true : undefined),
      30_000,
      "the three events finished",
    );
    await Promise.allSettled(work);
  } finally {
    clearInterval(ticking);
  }
  const limitKeys: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = await hg.redis.scan(
      cursor,
      "MATCH",
      `{${hg.config.keyPrefix}:limits:*`,
      "COUNT",
      1000,
    );
    cursor = next;
    limitKeys.push(...keys);
  } while (cursor !== "0");
  return limitKeys;
}

const overlap = () =>
  Math.max(...spans.map((s) => spans.filter((o) => o.start < s.end && s.start < o.end).length));

describe("admission, engine only", () => {
  it("without a tenant cap, events run without touching a limits key", async () => {
    expect(hg).toBeUndefined();
    const keys = await runThree({}, "engfree");
    expect(hg!.flow.admits).toBe(false);
    expect(keys).toEqual([]);
    expect(overlap()).toBe(3);
  });

  it("with HOURGLASS_TENANT_MAX_RUNNING, the cap holds: one at a time", async () => {
    await runThree({ HOURGLASS_TENANT_MAX_RUNNING: "1" }, "engcap");
    expect(hg!.flow.admits).toBe(true);
    expect(overlap()).toBe(1);
  });
});
