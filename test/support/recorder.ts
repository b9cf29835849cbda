import { z } from "zod";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import { defineHandler } from "../../shared/handlers/registry.ts";

export interface Run {
  readonly id: string;
  readonly attempt: number;
  readonly runAt: number;
  readonly startedAt: number;
}

/**
 * A handler type for tests: records every run, and fails as its payload asks (`failTimes` retryable
 * failures first, or `fatal` for a non-retryable one).
 */
export function recorder(type = "test.record") {
  const runs: Run[] = [];
  const handler = defineHandler(
    type,
    z.object({
      failTimes: z.number().int().optional(),
      fatal: z.boolean().optional(),
      label: z.string().optional(),
    }),
    async (payload, context) => {
      runs.push({
        id: context.id,
        attempt: context.attempt,
        runAt: context.runAt.getTime(),
        startedAt: Date.now(),
      });
      if (payload.fatal) throw new NonRetryableError("told to fail for good");
      if (payload.failTimes !== undefined && context.attempt <= payload.failTimes) {
        throw new Error(`told to fail attempt ${context.attempt}`);
      }
    },
  );
  return { handler, runs, runsOf: (id: string) => runs.filter((r) => r.id === id) };
}
