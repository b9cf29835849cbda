import { z } from "zod";
import { DependencyUnavailableError, NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";

export interface Run {
  readonly id: string;
  readonly attempt: number;
  readonly runAt: number;
  readonly startedAt: number;
}

/**
 * A handler type for tests: records every run, and fails as its payload asks (`failTimes` retryable
 * failures first, `fatal` for a non-retryable one, or `unavailableRuns`: its first runs find a
 * dependency unavailable, which gives the attempt back, so they are counted by run, not attempt).
 */
export function recorder(type = "test.record") {
  const runs: Run[] = [];
  const handler = defineHandler(
    type,
    z.object({
      failTimes: z.number().int().optional(),
      fatal: z.boolean().optional(),
      unavailableRuns: z.number().int().optional(),
      label: z.string().optional(),
    }),
    async (payload, context) => {
      runs.push({
        id: context.id,
        attempt: context.attempt,
        runAt: context.runAt.getTime(),
        startedAt: Date.now(),
      });
      const run = runs.filter((r) => r.id === context.id).length;
      if (payload.unavailableRuns !== undefined && run <= payload.unavailableRuns) {
        throw new DependencyUnavailableError(`the test's dependency (run ${run})`, { retryAfterMs: 10 });
      }
      if (payload.fatal) throw new NonRetryableError("told to fail for good");
      if (payload.failTimes !== undefined && context.attempt <= payload.failTimes) {
        throw new Error(`told to fail attempt ${context.attempt}`);
      }
    },
  );
  return { handler, runs, runsOf: (id: string) => runs.filter((r) => r.id === id) };
}
