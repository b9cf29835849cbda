import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The AWS-shaped run goes first. It spends about 160 s mostly waiting on the template's cadence (a
 * 120 s look-ahead, a dispatcher tick a minute), so it overlaps the rest of the suite from the start;
 * sorted by size, as a fresh clone sorts files with no timing cache, it came last and the suite
 * waited for it alone.
 */
class WaitingFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const waiting = (file: TestSpecification) => file.moduleId.endsWith("test/aws-shaped/run.test.ts");
    return [...sorted.filter(waiting), ...sorted.filter((file) => !waiting(file))];
  }
}

export default defineConfig({
  // The same module the Lambda bundles alias (see infra/construct/compute.ts) and tsconfig maps.
  resolve: {
    alias: { "@hourglass/handlers": fileURLToPath(new URL("./functions/handlers.ts", import.meta.url)) },
  },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The integration files share one Redis, DynamoDB Local and fauxqs; each uses its own key
    // prefix, tables and queue, so they can run side by side.
    pool: "forks",
    // In CI, also a machine-readable report, from which .ci/run prints the closing tally.
    reporters: process.env.CI
      ? ["default", ["json", { outputFile: ".hourglass/test-results.json" }]]
      : ["default"],
    maxWorkers: 2,
    sequence: { sequencer: WaitingFilesFirst },
    // The SDK's advisory when a test deliberately queues more requests than an agent has sockets
    // (bursts, crash recovery). It is about throughput tuning, not a failure; a passing run should
    // read as passing. Every other line a test logs still shows.
    onConsoleLog: (log) => !log.includes("@smithy/node-http-handler:WARN - socket usage at capacity"),
  },
});
