import type { ChildProcess } from "node:child_process";
import { GetQueueAttributesCommand, SetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRuntime } from "../../shared/local/runtime.ts";
import { freshTenant } from "../support/engine.ts";
import { type FlowRun, flowHandler, flowRuns, startFlowChild } from "../support/flow-child-process.ts";
import { eventually, type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * A kill -9 in the middle of a shared queue message (config `eventsPerMessage`): a real process
 * (test/support/flow-child.ts) runs the dispatcher and worker, four events share each message, and
 * the process dies with SIGKILL after two events of each message have succeeded while the other
 * two still run. The message is never deleted (its last events never finished), so it comes back;
 * a fresh process must run the two that were cut off (invariant 2), and never the two that had
 * succeeded (invariant 8), and nothing may start before its time (invariant 1).
 */

let hg: TestHourglass;
let runsKey: string;
let child: ChildProcess | undefined;

const record = flowHandler(() => ({ redis: hg.redis, runsKey }), { work: true });

const ENV = {
  // One shard, so the dispatcher claims all eight in one go and packs them four a message.
  HOURGLASS_SHARDS: "1",
  HOURGLASS_SHARD_GROUPS: "1",
  HOURGLASS_EVENTS_PER_MESSAGE: "4",
  // Longer than the slow events' work, so only the kill cuts them off.
  HOURGLASS_HANDLER_TIMEOUT_SECONDS: "8",
  HOURGLASS_RUN_LEASE_MARGIN_MS: "200",
  HOURGLASS_DISPATCH_LEASE_SECONDS: "2",
};

beforeAll(async () => {
  hg = await testHourglass(ENV, { handlers: [record] });
  runsKey = `{${hg.config.keyPrefix}:test}:bundle-runs`;
  // The messages the dead process held come back within the test (360 s by default), to a
  // process that must drop the events of them that finished or run elsewhere.
  await hg.sqs.send(
    new SetQueueAttributesCommand({ QueueUrl: hg.queueUrl!, Attributes: { VisibilityTimeout: "8" } }),
  );
});

async function queued(): Promise<{ visible: number; inFlight: number }> {
  const { Attributes } = await hg.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: hg.queueUrl!,
      AttributeNames: ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    }),
  );
  return {
    visible: Number(Attributes!.ApproximateNumberOfMessages),
    inFlight: Number(Attributes!.ApproximateNumberOfMessagesNotVisible),
  };
}
afterAll(async () => {
  if (child?.exitCode === null) child.kill("SIGKILL");
  await hg.destroy();
});

async function runs(): Promise<FlowRun[]> {
  return flowRuns(hg, runsKey);
}

async function statuses(tenant: string, ids: readonly string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await hg.events.get(tenant, id)).status));
}

describe("kill -9 in the middle of a shared message", () => {
  it("runs again only the events it cut off: each of them once more, the finished ones never", async () => {
    const tenant = freshTenant("bundlekill");
    // Same instant, so they share messages; the index orders equal times by id, so each message
    // of four holds two quick events and two slow ones.
    const ids = Array.from({ length: 8 }, (_, i) => `e${i}-${i % 2 === 0 ? "quick" : "slow"}`);
    const quick = ids.filter((id) => id.endsWith("quick"));
    const slow = ids.filter((id) => id.endsWith("slow"));
    const runAt = new Date(Date.now() + 1_500).toISOString();
    const results = await hg.events.scheduleBatch(
      tenant,
      ids.map((id) => ({
        id,
        type: "test.flow",
        payload: { workMs: id.endsWith("slow") ? 6_000 : 0 },
        runAt,
      })),
    );
    expect(results.every((r) => r.ok)).toBe(true);

    child = await startFlowChild(hg, ENV, runsKey);
    const childPid = child.pid!;
    await eventually(
      async () => {
        const started = new Set((await runs()).map((r) => r.id));
        const done = await statuses(tenant, quick);
        return started.size === ids.length && done.every((s) => s === "succeeded") ? true : undefined;
      },
      30_000,
      "every event started in the child, and the quick ones succeeded",
    );
    // Two messages of four, both still in flight: their slow events have not finished.
    expect(await queued()).toEqual({ visible: 0, inFlight: 2 });
    child.kill("SIGKILL");
    await new Promise((done) => child!.once("exit", done));
    expect((await statuses(tenant, slow)).every((s) => s !== "succeeded")).toBe(true);

    const runtime = startRuntime(hg, { tickMs: 100 });
    try {
      await eventually(
        async () => ((await statuses(tenant, ids)).every((s) => s === "succeeded") ? true : undefined),
        45_000,
        "every event succeeded after the kill",
      );
      // The two messages the dead process held came back, and were deleted without running
      // anything (every run is counted below).
      await eventually(
        async () => {
          const left = await queued();
          return left.visible + left.inFlight === 0 ? true : undefined;
        },
        30_000,
        "the dead process's messages to come back and be deleted",
      );
    } finally {
      await runtime.stop();
    }

    const all = await runs();
    for (const run of all) expect(run.start).toBeGreaterThanOrEqual(run.runAt);
    for (const id of quick) {
      expect(all.filter((r) => r.id === id).map((r) => r.pid)).toEqual([childPid]);
    }
    for (const id of slow) {
      expect(all.filter((r) => r.id === id).map((r) => r.pid)).toEqual([childPid, process.pid]);
    }
  }, 90_000);
});
