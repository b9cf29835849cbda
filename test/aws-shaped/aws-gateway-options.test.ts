import { randomBytes } from "node:crypto";
import { DynamoDBClient, ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AwsGateway,
  type GatewayPrincipal,
  startAwsGateway,
} from "../../scripts/aws-shaped/aws-gateway/index.ts";

/**
 * The gateway's two knobs: a per-service delay (added once per call, before the answer, never on
 * top of a long poll's own wait) and enforcement (off: IAM's refusals are recorded, not applied).
 */
const REGION = "us-east-1";
const ACCOUNT = "000000000000";
const SECRET_ARN = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:Webhook-Xy12Zq`;
const dynamoEndpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? "";
const sqsEndpoint = process.env.AWS_ENDPOINT_URL_SQS ?? "";
const queueName = `gw${randomBytes(4).toString("hex")}-poll`;
const directSqs = new SQSClient({
  region: REGION,
  endpoint: sqsEndpoint,
  credentials: { accessKeyId: "setup", secretAccessKey: "setup" },
});

const worker: GatewayPrincipal = {
  name: "worker",
  arn: `arn:aws:iam::${ACCOUNT}:role/HourglassWorkerRole`,
  policies: [
    {
      name: "worker",
      document: {
        Version: "2012-10-17",
        Statement: [
          { Effect: "Allow", Action: "dynamodb:ListTables", Resource: "*" },
          {
            Effect: "Allow",
            Action: "sqs:ReceiveMessage",
            Resource: `arn:aws:sqs:${REGION}:${ACCOUNT}:${queueName}`,
          },
        ],
      },
    },
  ],
};

const DELAY: Readonly<Record<string, number>> = { dynamodb: 150, sqs: 200, secretsmanager: 120 };
let gateway: AwsGateway;
let queueUrl: string;

function as<T>(Client: new (config: object) => T, url: string, extra: object = {}): T {
  return new Client({
    region: REGION,
    endpoint: url,
    credentials: { accessKeyId: "AKIDWORKER", secretAccessKey: "unused" },
    maxAttempts: 1,
    ...extra,
  });
}

async function timed<T>(work: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = performance.now();
  const result = await work();
  return { result, ms: performance.now() - start };
}

beforeAll(async () => {
  queueUrl = (await directSqs.send(new CreateQueueCommand({ QueueName: queueName }))).QueueUrl ?? "";
  gateway = await startAwsGateway({
    region: REGION,
    accountId: ACCOUNT,
    dynamoEndpoint,
    sqsEndpoint,
    principals: new Map([["AKIDWORKER", worker]]),
    secrets: new Map([[SECRET_ARN, "whsec_1"]]),
    latency: (service) => DELAY[service] ?? 0,
  });
});

afterAll(async () => {
  await gateway?.stop();
  await directSqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
});

describe("latency", () => {
  it("delays a forwarded call and a locally answered one by their service's figure", async () => {
    // Warm clients first, so what is timed is the call: a delay applied twice must show.
    const dynamo = as(DynamoDBClient, gateway.url);
    await dynamo.send(new ListTablesCommand({}));
    const secrets = as(SecretsManagerClient, gateway.url);
    await secrets.send(new GetSecretValueCommand({ SecretId: SECRET_ARN })).catch(() => undefined);
    const forwarded = await timed(() => dynamo.send(new ListTablesCommand({})));
    expect(forwarded.result.TableNames).toBeDefined();
    expect(forwarded.ms).toBeGreaterThanOrEqual(DELAY.dynamodb! - 5);
    expect(forwarded.ms).toBeLessThan(2 * DELAY.dynamodb!);
    // Denied, but a refusal is an answer from AWS too, and takes the same trip.
    const local = await timed(() =>
      secrets.send(new GetSecretValueCommand({ SecretId: SECRET_ARN })).catch((e: unknown) => e),
    );
    expect(local.result).toMatchObject({ name: "AccessDeniedException" });
    expect(local.ms).toBeGreaterThanOrEqual(DELAY.secretsmanager! - 5);
    expect(local.ms).toBeLessThan(2 * DELAY.secretsmanager!);
  });

  it("adds its delay to a long poll once, not on top of the wait again", async () => {
    const poll = await timed(() =>
      as(SQSClient, gateway.url, { useQueueUrlAsEndpoint: false }).send(
        new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 }),
      ),
    );
    expect(poll.result.Messages ?? []).toEqual([]);
    expect(poll.ms).toBeGreaterThanOrEqual(1_000 + DELAY.sqs! - 50);
    expect(poll.ms).toBeLessThan(1_000 + DELAY.sqs! + 400);
  });
});

describe("enforce: false", () => {
  it("lets a call IAM refuses through, and still records the refusal", async () => {
    const lenient = await startAwsGateway({
      region: REGION,
      accountId: ACCOUNT,
      dynamoEndpoint,
      sqsEndpoint,
      principals: new Map([["AKIDWORKER", worker]]),
      secrets: new Map([[SECRET_ARN, "whsec_1"]]),
      enforce: false,
    });
    try {
      const secret = await as(SecretsManagerClient, lenient.url).send(
        new GetSecretValueCommand({ SecretId: SECRET_ARN }),
      );
      expect(secret.SecretString).toBe("whsec_1");
      expect(lenient.denied()).toEqual([
        expect.objectContaining({
          principal: "worker",
          action: "secretsmanager:GetSecretValue",
          resource: SECRET_ARN,
          decision: "ImplicitlyDenied",
        }),
      ]);
    } finally {
      await lenient.stop();
    }
  });
});
