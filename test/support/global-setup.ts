import { type RunningStack, startLocalStack, useLocalEndpoints } from "../../shared/local/stack.ts";

let stack: RunningStack | undefined;

// The SDK's Node 20 notice (README, "Node versions") once per test worker is noise in a passing run.
// Its own switch; the test workers inherit it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/** Starts (or reuses) the embedded stand-ins once for the whole run; workers inherit the endpoints. */
export async function setup(): Promise<void> {
  stack = await startLocalStack({
    redisUrl: process.env.HOURGLASS_REDIS_URL ?? "redis://127.0.0.1:6379",
    dataDir: ".hourglass/test",
    persist: false,
    // With an endpoint configured (LocalStack, AWS), that service is not started here.
    skip: [
      ...(process.env.AWS_ENDPOINT_URL_DYNAMODB || process.env.AWS_ENDPOINT_URL
        ? (["dynamodb"] as const)
        : []),
      ...(process.env.AWS_ENDPOINT_URL_SQS || process.env.AWS_ENDPOINT_URL ? (["sqs"] as const) : []),
    ],
    log: (line) => process.stdout.write(`[stack] ${line}\n`),
  });
  useLocalEndpoints(stack);
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
