import type { APIGatewayProxyEvent, Context, SQSEvent } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { toSqsRecord } from "../../shared/local/poller.ts";
import { type TestHourglass, testHourglass } from "../support/harness.ts";

/**
 * The three Lambda entry points, invoked as Lambda would (there is no EventBridge Scheduler or
 * Lambda emulator here), against the real local stack: the API through the hono/aws-lambda
 * adapter, the dispatcher with a context, the worker with an SQS batch.
 */
let setup: TestHourglass;
const context = {
  getRemainingTimeInMillis: () => 30_000,
  functionName: "test",
  awsRequestId: "r1",
} as unknown as Context;

beforeAll(async () => {
  // Provision tables and a queue, then point the entry points' configuration at them.
  setup = await testHourglass();
  Object.assign(process.env, {
    HOURGLASS_MODE: "local",
    HOURGLASS_KEY_PREFIX: setup.config.keyPrefix,
    HOURGLASS_SHARDS: String(setup.config.shards),
    HOURGLASS_EVENTS_TABLE: setup.config.tables.events,
    HOURGLASS_LEASES_TABLE: setup.config.tables.leases,
    HOURGLASS_LEDGER_TABLE: setup.config.tables.ledger,
    HOURGLASS_QUEUE_URL: setup.queueUrl,
    HOURGLASS_LOOKAHEAD_SECONDS: "5",
    LOG_LEVEL: "ERROR",
    POWERTOOLS_METRICS_DISABLED: "true",
  });
});

afterAll(async () => {
  await setup.destroy();
});

// hono/aws-lambda's own event type is a union that the REST (v1) shape only loosely matches.
const apiEvent = (method: string, path: string, body?: unknown): never =>
  ({
    httpMethod: method,
    path,
    resource: "/{proxy+}",
    headers: { "content-type": "application/json", host: "abc.execute-api.eu-west-1.amazonaws.com" },
    multiValueHeaders: {},
    queryStringParameters: null,
    multiValueQueryStringParameters: null,
    pathParameters: { proxy: path.slice(1) },
    stageVariables: null,
    body: body === undefined ? null : JSON.stringify(body),
    isBase64Encoded: false,
    requestContext: {
      stage: "api",
      identity: { userArn: "arn:aws:sts::123456789012:assumed-role/Orders/s" },
      path: `/api${path}`,
    },
  }) as unknown as APIGatewayProxyEvent as never;

describe("Lambda entry points", () => {
  it("schedule through the API function, dispatch, and run through the worker function", async () => {
    const api = (await import("../../functions/api/index.ts")).handler;
    const created = (await api(
      apiEvent("POST", "/v1/events", {
        type: "webhook",
        // Beyond the 5 s look-ahead: it waits in the index until the dispatcher function claims it.
        delaySeconds: 6,
        payload: { url: "http://127.0.0.1:9/x" },
      }),
      context,
    )) as {
      statusCode: number;
      body: string;
    };
    expect(created.statusCode).toBe(201);
    const { id } = JSON.parse(created.body);
    // The tenant is the caller's IAM principal.
    expect((await setup.events.get("123456789012-role-Orders", id)).status).toBe("scheduled");
    await new Promise((done) => setTimeout(done, 1_200));

    const dispatcher = (await import("../../functions/dispatcher/index.ts")).handler;
    const report = await dispatcher({}, context);
    expect(report).toMatchObject({ claimed: 1, sent: 1, failed: 0, skippedGroups: 0 });
    expect((await setup.events.get("123456789012-role-Orders", id)).status).toBe("dispatched");

    // Take the message off the queue as the event source would, and hand it to the worker function.
    const { ReceiveMessageCommand } = await import("@aws-sdk/client-sqs");
    const received = await setup.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: setup.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 10 }),
    );
    expect(received.Messages?.length).toBe(1);
    const event: SQSEvent = { Records: received.Messages!.map((m) => toSqsRecord(m, setup.queueUrl!)) };
    const worker = (await import("../../functions/worker/index.ts")).handler;
    const response = await worker(event, context);
    // Port 9 refuses the connection: a handler failure, retried by Hourglass, not an SQS failure.
    expect(response.batchItemFailures).toEqual([]);
    const after = await setup.events.get("123456789012-role-Orders", id);
    // The retry (a backoff of at most 1 s) is due within the look-ahead: the worker leased it and
    // sent it straight to the queue, rather than leaving it for the next dispatcher tick.
    expect(after.status).toBe("dispatched");
    expect(after.lastError).toContain("ECONNREFUSED");
    expect((await setup.journal!.get("123456789012-role-Orders", id))?.status).toBe("retrying");
  });

  it("answers a malformed message with no retry loop, and a bad request with a problem", async () => {
    const worker = (await import("../../functions/worker/index.ts")).handler;
    // The worker logs the message it drops (and Powertools notes that the batch had no metrics);
    // captured here, so a passing run does not print an ERROR.
    const lines: string[] = [];
    const capture = (chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    };
    const out = vi.spyOn(process.stdout, "write").mockImplementation(capture);
    const err = vi.spyOn(process.stderr, "write").mockImplementation(capture);
    const response = await worker(
      { Records: [toSqsRecord({ MessageId: "m1", ReceiptHandle: "r", Body: "not json" }, setup.queueUrl!)] },
      context,
    ).finally(() => {
      out.mockRestore();
      err.mockRestore();
    });
    expect(response.batchItemFailures).toEqual([]);
    expect(lines.join("")).toMatch(/ERROR +malformed message dropped messageId=m1/);
    const api = (await import("../../functions/api/index.ts")).handler;
    const bad = (await api(apiEvent("POST", "/v1/events", { type: "webhook" }), context)) as {
      statusCode: number;
      multiValueHeaders: Record<string, string[]>;
    };
    expect(bad.statusCode).toBe(422);
    expect(bad.multiValueHeaders["content-type"]?.[0]).toContain("application/problem+json");
  });
});
