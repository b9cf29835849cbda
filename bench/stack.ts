import { Redis } from "ioredis";
import { type RunningStack, startLocalStack } from "../shared/local/stack.ts";
import { freePorts, type RedisServer, startRedisServer } from "../test/support/redis-servers.ts";

export interface BenchStack {
  readonly redisServer: RedisServer;
  readonly stack: RunningStack;
  /** Redis's `hz`, quoted beside every lateness figure. */
  readonly hz: string;
  readonly redisVersion: string;
  stop(): Promise<void>;
}

/**
 * The bench's own stand-ins: a private redis-server, DynamoDB Local and fauxqs on free ports, so a
 * run never reuses (and is never slowed by) the services other people's tests are using on the
 * default ports. The SDK is pointed at them whatever the environment says.
 */
export async function startBenchStack(options: { fauxqs?: FauxqsPlacement } = {}): Promise<BenchStack> {
  const redisServer = await startRedisServer();
  // Distinct (held together while picked), so two of the stack's servers never get the same port.
  const [sqsPort, dynamoPort] = (await freePorts(2)) as [number, number];
  // The layout before fauxqs had a process of its own, for side-by-side figures: the stack reuses
  // a server already answering on its port.
  const inProcess = options.fauxqs === "process" ? await fauxqsInThisProcess(sqsPort) : undefined;
  const stack = await startLocalStack({
    redisUrl: redisServer.url,
    dynamoPort,
    sqsPort,
    dataDir: ".hourglass/bench",
    persist: false,
  });
  delete process.env.AWS_ENDPOINT_URL;
  process.env.AWS_ENDPOINT_URL_DYNAMODB = stack.dynamoEndpoint;
  process.env.AWS_ENDPOINT_URL_SQS = stack.sqsEndpoint;
  process.env.AWS_REGION ??= "us-east-1";
  process.env.AWS_ACCESS_KEY_ID ??= "local";
  process.env.AWS_SECRET_ACCESS_KEY ??= "local";
  const probe = new Redis(redisServer.url);
  const hz = ((await probe.config("GET", "hz")) as string[])[1] ?? "?";
  const redisVersion = (await probe.info("server")).match(/redis_version:(\S+)/)?.[1] ?? "?";
  probe.disconnect();
  return {
    redisServer,
    stack,
    hz,
    redisVersion,
    async stop() {
      await stack.stop();
      await inProcess?.close();
      await redisServer.kill();
    },
  };
}

/** Where fauxqs runs: `child` (what `npm start` does) or `process` (in the bench's own event loop). */
export type FauxqsPlacement = "child" | "process";

async function fauxqsInThisProcess(port: number) {
  const { buildApp } = await import("fauxqs");
  const app = buildApp({ logger: false, defaultRegion: "us-east-1" });
  await app.listen({ host: "127.0.0.1", port });
  return app;
}
