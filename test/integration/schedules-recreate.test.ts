import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import { type Runtime, startRuntime } from "../../shared/local/runtime.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * A schedule deleted and created again under the same id is a new schedule: none of its
 * occurrences may meet the old one's events (cancelled by the delete), or they would be taken for
 * its own and never run. On the running local stack, real clock.
 */
const tenant = "acme";
const seen: { id: string; occurrenceAt: number; startedAt: number }[] = [];
let live: TestHourglass;
let runtime: Runtime;

beforeAll(async () => {
  const probe = defineHandler("test.occurrence", z.object({}), async (_, context) => {
    seen.push({ id: context.id, occurrenceAt: context.occurrenceAt!.getTime(), startedAt: Date.now() });
  });
  live = await testHourglass({}, { handlers: [probe] });
  runtime = startRuntime(live, { tickMs: 200 });
});
afterAll(async () => {
  await runtime.stop();
  await live.destroy();
});

const body = { id: "again", rate: "1 second", event: { type: "test.occurrence", payload: {} } };

describe("delete, then create again under the same id", () => {
  it("runs every occurrence of the new schedule, once", async () => {
    await live.schedules!.create(tenant, body);
    // The old schedule materialized a look-ahead of occurrences before it is deleted.
    await eventually(
      async () => ((await live.schedules!.get(tenant, "again")).occurrences >= 3 ? true : undefined),
      60_000,
      "the first schedule's occurrences",
    );
    await live.schedules!.delete(tenant, "again");
    await sleep(1_000);
    const { created, schedule } = await live.schedules!.create(tenant, body);
    expect(created).toBe(true);
    const first = schedule.nextAt!;
    // Past the old schedule's look-ahead, so both schedules' instants overlap in what is checked.
    const last = first + live.config.lookAheadMs + 3_000;
    await eventually(
      async () => (seen.some((s) => s.occurrenceAt >= last) ? true : undefined),
      60_000,
      "the new schedule's occurrences to run",
    );
    await live.schedules!.delete(tenant, "again");
    const instants = [];
    for (let t = first; t <= last; t += 1_000) instants.push(t);
    const ran = seen.filter((s) => s.occurrenceAt >= first && s.occurrenceAt <= last);
    expect(ran.map((s) => s.occurrenceAt).sort((a, b) => a - b)).toEqual(instants);
    for (const run of ran) expect(run.startedAt).toBeGreaterThanOrEqual(run.occurrenceAt);
  }, 180_000);
});
