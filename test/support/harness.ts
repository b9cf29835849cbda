import { randomBytes } from "node:crypto";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { DeleteQueueCommand, GetQueueUrlCommand } from "@aws-sdk/client-sqs";
import { createDynamoClient, createSqsClient } from "../../shared/aws.ts";
import { type HourglassConfig, loadConfig } from "../../shared/config.ts";
import { createHourglass, type Hourglass, type HourglassOptions } from "../../shared/hourglass.ts";
import { provision } from "../../shared/local/provision.ts";
import { silentLogger } from "../../shared/logger.ts";

export interface TestHourglass extends Hourglass {
  /** Deletes this test's tables, queues and keys. */
  destroy(): Promise<void>;
}

/**
 * An Hourglass on the shared local stack with its own key prefix, tables and queue, so test files
 * never see each other's data.
 */
export async function testHourglass(
  env: Record<string, string> = {},
  options: Omit<HourglassOptions, "config"> = {},
): Promise<TestHourglass> {
  const name = `t${randomBytes(4).toString("hex")}`;
  const config: HourglassConfig = loadConfig(process.env, {
    HOURGLASS_MODE: "local",
    HOURGLASS_KEY_PREFIX: name,
    HOURGLASS_EVENTS_TABLE: `${name}-events`,
    HOURGLASS_LEASES_TABLE: `${name}-leases`,
    HOURGLASS_LEDGER_TABLE: `${name}-ledger`,
    HOURGLASS_SCHEDULES_TABLE: `${name}-schedules`,
    HOURGLASS_QUEUE_NAME: `${name}-work`,
    HOURGLASS_SHARDS: "4",
    HOURGLASS_SHARD_GROUPS: "2",
    HOURGLASS_LOOKAHEAD_SECONDS: "5",
    LOG_LEVEL: "SILENT",
    ...env,
  });
  const dynamo = createDynamoClient();
  const sqs = createSqsClient();
  if (config.journal) {
    await provision({
      dynamo,
      sqs,
      config: config,
    });
  }
  const hourglass = await createHourglass({ logger: silentLogger, ...options, config });
  return {
    ...hourglass,
    async destroy() {
      await hourglass.metrics.flush(); // so no metrics key is written after the keys are deleted
      const keys = await scanKeys(hourglass, `{${name}:*`);
      if (keys.length > 0) await hourglass.redis.del(...keys);
      await hourglass.close();
      if (config.journal) {
        for (const table of Object.values(config.tables)) {
          await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => {});
        }
        for (const queue of [config.queue.name, `${config.queue.name}-dlq`]) {
          const url = await sqs.send(new GetQueueUrlCommand({ QueueName: queue })).catch(() => undefined);
          if (url?.QueueUrl)
            await sqs.send(new DeleteQueueCommand({ QueueUrl: url.QueueUrl })).catch(() => {});
        }
      }
      dynamo.destroy();
      sqs.destroy();
    },
  };
}

async function scanKeys(hourglass: Hourglass, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await (hourglass.redis as import("ioredis").Redis).scan(
      cursor,
      "MATCH",
      pattern,
      "COUNT",
      1000,
    );
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

/** Polls until `check` returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  what = "condition",
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
}

/** A gate for ordering two calls in a test: one awaits `promise`, the other calls `fire`. */
export function signal(): { readonly promise: Promise<void>; readonly fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((done) => {
    fire = done;
  });
  return { promise, fire };
}
