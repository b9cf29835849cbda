import { DescribeTableCommand } from "@aws-sdk/client-dynamodb";
import { GetQueueAttributesCommand } from "@aws-sdk/client-sqs";
import type { Hourglass } from "../hourglass.ts";

export interface HealthReport {
  readonly status: "ok" | "degraded";
  readonly checks: Record<string, { ok: boolean; latencyMs: number; error?: string }>;
}

const TIMEOUT_MS = 2_000;

/** Asks Redis, DynamoDB and SQS for an answer, in parallel, each under a short timeout. */
export async function checkHealth(hourglass: Hourglass): Promise<HealthReport> {
  const probes: Record<string, () => Promise<unknown>> = {
    redis: () => hourglass.redis.ping(),
  };
  if (hourglass.journal) {
    probes.dynamodb = () =>
      hourglass.dynamo.send(new DescribeTableCommand({ TableName: hourglass.config.tables.events }), {
        abortSignal: AbortSignal.timeout(TIMEOUT_MS),
      });
  }
  if (hourglass.queueUrl) {
    probes.sqs = () =>
      hourglass.sqs.send(
        new GetQueueAttributesCommand({ QueueUrl: hourglass.queueUrl, AttributeNames: ["QueueArn"] }),
        { abortSignal: AbortSignal.timeout(TIMEOUT_MS) },
      );
  }
  const entries = await Promise.all(
    Object.entries(probes).map(async ([name, probe]) => {
      const started = performance.now();
      try {
        await Promise.race([
          probe(),
          new Promise((_, reject) => setTimeout(() => reject(new Error("timed out")), TIMEOUT_MS).unref()),
        ]);
        return [name, { ok: true, latencyMs: Math.round(performance.now() - started) }] as const;
      } catch (error) {
        return [
          name,
          { ok: false, latencyMs: Math.round(performance.now() - started), error: (error as Error).message },
        ] as const;
      }
    }),
  );
  const checks = Object.fromEntries(entries);
  return { status: entries.every(([, check]) => check.ok) ? "ok" : "degraded", checks };
}
