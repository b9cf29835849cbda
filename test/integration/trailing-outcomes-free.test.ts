import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineHandler } from "../../shared/handlers/registry.ts";
import type { AdmitRequest } from "../../shared/limits/flow-control.ts";
import { TrailingOutcomes } from "../../shared/local/outcome-gate.ts";
import { dispatchEvery, startConsumer } from "../support/consumer.ts";
import { freshTenant } from "../support/engine.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * A failed flow-control free must not cost a handler's outcome. With a gate set (every local
 * runtime's worker), the type's concurrency slot is given back before the outcome is written (the
 * handler no longer runs). If that free failed there (a Redis blip on the limits keys, or another
 * tenant's key in the same batch) and the failure were thrown at once, a handler that succeeded
 * would have no outcome: its run lease runs out, the dispatcher finds the journal pending and sends
 * a copy, and the handler runs a second time. The failure is reported after the outcome instead,
 * as it is without a gate (Lambda).
 *
 * A short run lease (1 s + 200 ms) so that a copy would come within the test.
 */
const ran: string[] = [];
const handler = defineHandler("review.trail", z.object({}), async (_payload, context) => {
  ran.push(`${context.tenant}/${context.id}`);
});

let hg: TestHourglass;
let failFreeFor: string | undefined;
beforeAll(async () => {
  hg = await testHourglass(
    { HOURGLASS_HANDLER_TIMEOUT_SECONDS: "1", HOURGLASS_RUN_LEASE_MARGIN_MS: "200" },
    { handlers: [handler] },
  );
  // The worker's frees go through this object (deps.flow): fail the first free of one tenant.
  const free = hg.flow.free.bind(hg.flow);
  hg.flow.free = async (requests: readonly AdmitRequest[]) => {
    if (failFreeFor && requests.some((r) => r.tenant === failFreeFor)) {
      failFreeFor = undefined;
      throw new Error("redis blip on the flow-control free");
    }
    return free(requests);
  };
});
afterAll(async () => {
  await hg.destroy();
});

async function runOne(gate: TrailingOutcomes | undefined) {
  const tenant = freshTenant("rv");
  failFreeFor = tenant;
  const stopDispatching = dispatchEvery(hg);
  await hg.events.schedule(tenant, { id: "a", type: "review.trail", payload: {}, delaySeconds: 1 });
  const poller = startConsumer(hg, { ...(gate && { outcomes: gate }) });
  try {
    const key = `${tenant}/a`;
    await eventually(async () => (ran.includes(key) ? true : undefined), 20_000, "the handler ran");
    // Well past the 1.2 s run lease and a few dispatcher ticks.
    await new Promise((done) => setTimeout(done, 4_000));
    return {
      runs: ran.filter((k) => k === key).length,
      status: (await hg.journal!.get(tenant, "a"))?.status,
      failed: poller.counts.failed,
    };
  } finally {
    await stopDispatching();
    await poller.stop();
  }
}

describe("a failed flow-control free after a handler that succeeded", () => {
  it("without a gate (Lambda): the outcome is recorded, one run", async () => {
    const result = await runOne(undefined);
    expect(result.failed).toBeGreaterThanOrEqual(1); // the free's error did surface
    expect(result.status).toBe("succeeded");
    expect(result.runs).toBe(1);
  }, 40_000);

  it("with a gate (the local runtime): the outcome is recorded, one run", async () => {
    const gate = new TrailingOutcomes();
    hg.worker.trailOutcomes(gate);
    const result = await runOne(gate);
    expect(result.failed).toBeGreaterThanOrEqual(1);
    // Fails when the free throws before the outcome: the lease runs out and a copy runs again.
    expect(result.runs).toBe(1);
    expect(result.status).toBe("succeeded");
  }, 40_000);
});
