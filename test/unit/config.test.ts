import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../shared/config.ts";
import { WebhookSigning } from "../../shared/handlers/signing.ts";

describe("loadConfig", () => {
  it("gives local defaults: a one-second tick, a five-second look-ahead, private webhooks allowed", () => {
    const config = loadConfig({});
    expect(config.mode).toBe("local");
    expect(config.tickMs).toBe(1_000);
    expect(config.lookAheadMs).toBe(5_000);
    expect(config.webhook.allowPrivate).toBe(true);
    expect(config.redis.url).toBe("redis://127.0.0.1:6379");
    // `npm start` runs the worker in one process per CPU; 0 keeps it in the API's process.
    expect(config.local.workers).toBe(availableParallelism());
    expect(loadConfig({ HOURGLASS_LOCAL_WORKERS: "0" }).local.workers).toBe(0);
  });

  it("gives AWS defaults inside Lambda: a minute's tick, two minutes of look-ahead, no private webhooks", () => {
    const config = loadConfig({
      AWS_LAMBDA_FUNCTION_NAME: "worker",
      HOURGLASS_WEBHOOK_SECRET: "s".repeat(32),
    });
    expect(config.mode).toBe("aws");
    expect(config.tickMs).toBe(60_000);
    expect(config.lookAheadMs).toBe(120_000);
    expect(config.webhook.allowPrivate).toBe(false);
  });

  it("names the variable that is wrong", async () => {
    expect(() => loadConfig({ HOURGLASS_SHARDS: "zero" })).toThrow(/HOURGLASS_SHARDS/);
    expect(() => loadConfig({ HOURGLASS_REDIS_URL: "not a url" })).toThrow(/HOURGLASS_REDIS_URL/);
    expect(() => loadConfig({ HOURGLASS_LOOKAHEAD_SECONDS: "901" })).toThrow(/HOURGLASS_LOOKAHEAD_SECONDS/);
    expect(() => loadConfig({ HOURGLASS_LOCAL_WORKERS: "two" })).toThrow(/HOURGLASS_LOCAL_WORKERS/);
    expect(() => loadConfig({ HOURGLASS_LOCAL_WORKERS: "65" })).toThrow(/HOURGLASS_LOCAL_WORKERS/);
    for (const odd of ["-1", "20001", "1.5", "5s", "١٠"]) {
      expect(() => loadConfig({ HOURGLASS_LOCAL_OUTCOME_TRAIL_MS: odd }), odd).toThrow(
        /HOURGLASS_LOCAL_OUTCOME_TRAIL_MS/,
      );
    }
    expect(loadConfig({}).local.outcomeTrailMs).toBe(5_000);
    expect(loadConfig({ HOURGLASS_LOCAL_OUTCOME_TRAIL_MS: "0" }).local.outcomeTrailMs).toBe(0);
    expect(loadConfig({ HOURGLASS_LOCAL_OUTCOME_TRAIL_MS: "20000" }).local.outcomeTrailMs).toBe(20_000);
    // Events sharing a queue message: 4 locally, 1 on AWS (a Lambda batch would run 4× the handlers).
    expect(loadConfig({}).eventsPerMessage).toBe(4);
    expect(loadConfig({ HOURGLASS_MODE: "aws" }).eventsPerMessage).toBe(1);
    expect(loadConfig({ HOURGLASS_MODE: "aws", HOURGLASS_EVENTS_PER_MESSAGE: "5" }).eventsPerMessage).toBe(5);
    for (const odd of ["0", "101", "2.5"]) {
      expect(() => loadConfig({ HOURGLASS_EVENTS_PER_MESSAGE: odd }), odd).toThrow(
        /HOURGLASS_EVENTS_PER_MESSAGE/,
      );
    }
    // Messages visible ahead of their due time: 4 s locally, never on AWS, never past the look-ahead.
    expect(loadConfig({}).deliverAheadMs).toBe(4_000);
    expect(loadConfig({ HOURGLASS_MODE: "aws" }).deliverAheadMs).toBe(0);
    expect(loadConfig({ HOURGLASS_MODE: "aws", HOURGLASS_DELIVER_AHEAD_MS: "0" }).deliverAheadMs).toBe(0);
    expect(() => loadConfig({ HOURGLASS_MODE: "aws", HOURGLASS_DELIVER_AHEAD_MS: "1000" })).toThrow(
      "HOURGLASS_DELIVER_AHEAD_MS: must be 0 on AWS",
    );
    expect(loadConfig({ HOURGLASS_LOOKAHEAD_SECONDS: "2" }).deliverAheadMs).toBe(2_000);
    expect(loadConfig({ HOURGLASS_DELIVER_AHEAD_MS: "0" }).deliverAheadMs).toBe(0);
    expect(loadConfig({ HOURGLASS_DELIVER_AHEAD_MS: "5000" }).deliverAheadMs).toBe(5_000);
    expect(() => loadConfig({ HOURGLASS_DELIVER_AHEAD_MS: "5001" })).toThrow(
      "HOURGLASS_DELIVER_AHEAD_MS: must be at most the look-ahead (HOURGLASS_LOOKAHEAD_SECONDS, 5000 ms)",
    );
    for (const odd of ["-1", "60001", "1.5", "4s"]) {
      expect(() => loadConfig({ HOURGLASS_DELIVER_AHEAD_MS: odd }), odd).toThrow(
        /HOURGLASS_DELIVER_AHEAD_MS/,
      );
    }
    // Whole numbers are digits: Number() alone read a blank as 0 and took exponents and hex.
    for (const odd of [" ", "1e1", "0x2", "2.0", "+2"])
      expect(() => loadConfig({ HOURGLASS_LOCAL_WORKERS: odd }), odd).toThrow(/HOURGLASS_LOCAL_WORKERS/);
    expect(loadConfig({ HOURGLASS_SHARDS: "32" }).shards).toBe(32);
    // The near horizon must outlast the look-ahead plus three ticks (5 s + 3 × 1 s locally).
    expect(() => loadConfig({ HOURGLASS_INDEX_HORIZON_SECONDS: "7" })).toThrow(
      "HOURGLASS_INDEX_HORIZON_SECONDS: must be at least the look-ahead plus three ticks (8)",
    );
    expect(loadConfig({ HOURGLASS_INDEX_HORIZON_SECONDS: "8" }).indexHorizonMs).toBe(8_000);
    expect(loadConfig({}).indexHorizonMs).toBe(3_600_000);
    expect(() => loadConfig({ HOURGLASS_MODE: "aws", HOURGLASS_INDEX_HORIZON_SECONDS: "299" })).toThrow(
      /HOURGLASS_INDEX_HORIZON_SECONDS/,
    );
    // The dispatcher runs without the webhook secret; signing without it fails naming the variable.
    expect(loadConfig({ HOURGLASS_MODE: "aws" }).webhook.secret).toBeUndefined();
    const unsigned = new WebhookSigning(undefined, undefined);
    await expect(unsigned.secretsFor("t")).rejects.toThrow(ConfigError);
    await expect(unsigned.signingSecretsFor("t")).rejects.toThrow(/HOURGLASS_WEBHOOK_SECRET/);
    expect(() => loadConfig({ HOURGLASS_API_TOKENS: "acme:short" })).toThrow(/HOURGLASS_API_TOKENS/);
  });

  it("says what a good value looks like, for the settings npm start reads too", () => {
    expect(() => loadConfig({ HOURGLASS_TICK_MS: "abc" })).toThrow(
      "HOURGLASS_TICK_MS: a whole number from 50 to 300000",
    );
    expect(() => loadConfig({ HOURGLASS_REDIS_URL: "http://127.0.0.1:6379" })).toThrow(
      /HOURGLASS_REDIS_URL: a URL starting with redis:\/\/ or rediss:\/\//,
    );
    expect(() => loadConfig({ AWS_ENDPOINT_URL_SQS: "localhost:4566" })).toThrow(/AWS_ENDPOINT_URL_SQS/);
    expect(() => loadConfig({ HOURGLASS_DYNAMODB_PORT: "70000" })).toThrow(/HOURGLASS_DYNAMODB_PORT/);
    const config = loadConfig({
      AWS_ENDPOINT_URL_DYNAMODB: "http://127.0.0.1:4566",
      HOURGLASS_SQS_PORT: "4600",
    });
    expect(config.local).toMatchObject({ dynamoPort: 8000, sqsPort: 4600, external: ["dynamodb"] });
  });

  it("parses API tokens into a token → tenant map", () => {
    const config = loadConfig({ HOURGLASS_API_TOKENS: "acme:0123456789abcdef,globex:fedcba9876543210" });
    expect(config.apiTokens.get("0123456789abcdef")).toBe("acme");
    expect(config.apiTokens.get("fedcba9876543210")).toBe("globex");
  });
});

describe("webhook targets (issue 9)", () => {
  const tokens = { HOURGLASS_API_TOKENS: "a:aaaaaaaaaaaaaaaaaaaa,b:bbbbbbbbbbbbbbbbbbbb" };

  it("turns private targets off by default once API tokens make the process multi-tenant", () => {
    expect(loadConfig(tokens).webhook.allowPrivate).toBe(false);
    expect(loadConfig(tokens).webhook.allowLoopback).toBe(false);
    expect(loadConfig({ ...tokens, HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true" }).webhook.allowPrivate).toBe(
      true,
    );
  });

  it("caps webhook requests per tenant and origin at 64 a worker process unless told otherwise", () => {
    expect(loadConfig({}).webhook.requestsPerOrigin).toBe(64);
    expect(loadConfig({ HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN: "1" }).webhook.requestsPerOrigin).toBe(1);
    for (const odd of ["0", "10001", "2.5", "many"])
      expect(() => loadConfig({ HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN: odd }), odd).toThrow(
        /HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN/,
      );
  });

  it("never allows loopback on AWS, where it is the Lambda Runtime API, even with private targets on", () => {
    const config = loadConfig({
      AWS_LAMBDA_FUNCTION_NAME: "worker",
      HOURGLASS_WEBHOOK_SECRET: "s".repeat(32),
      HOURGLASS_WEBHOOK_ALLOW_PRIVATE: "true",
    });
    expect(config.webhook.allowPrivate).toBe(true);
    expect(config.webhook.allowLoopback).toBe(false);
  });

  it("refuses the embedded stack's ports and the API's own port locally, whatever else is allowed", () => {
    const config = loadConfig({
      HOURGLASS_REDIS_URL: "redis://127.0.0.1:6390",
      AWS_ENDPOINT_URL_DYNAMODB: "http://127.0.0.1:8001",
      AWS_ENDPOINT_URL_SQS: "http://127.0.0.1:4567",
      PORT: "3100",
    });
    expect([...config.webhook.refusedPorts].sort()).toEqual([16390, 3100, 4567, 6390, 8001].sort());
    expect([...loadConfig({}).webhook.refusedPorts].sort()).toEqual([16379, 3000, 4566, 6379, 8000].sort());
  });

  it("refuses the ports npm start runs its own DynamoDB Local and SQS emulator on (HOURGLASS_*_PORT)", () => {
    // docs/local.md's second copy: no endpoint variables, so the stand-ins start on these ports,
    // DynamoDB Local on every interface. Refusing 8000 and 4566 instead left them reachable.
    const config = loadConfig({
      PORT: "3100",
      HOURGLASS_REDIS_URL: "redis://127.0.0.1:6380",
      HOURGLASS_DYNAMODB_PORT: "8100",
      HOURGLASS_SQS_PORT: "4666",
    });
    expect([...config.webhook.refusedPorts].sort()).toEqual([16380, 3100, 4666, 6380, 8100].sort());
    // An endpoint variable names the service actually used; its port is the one refused.
    const elsewhere = loadConfig({
      HOURGLASS_DYNAMODB_PORT: "8100",
      AWS_ENDPOINT_URL_DYNAMODB: "http://127.0.0.1:8200",
    });
    expect(elsewhere.webhook.refusedPorts.has(8200)).toBe(true);
  });
});
