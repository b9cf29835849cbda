import { randomBytes } from "node:crypto";
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
} from "@aws-sdk/client-dynamodb";
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SQSClient,
} from "@aws-sdk/client-sqs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AwsGateway,
  type GatewayPrincipal,
  startAwsGateway,
} from "../../scripts/aws-shaped/aws-gateway/index.ts";

/**
 * The gateway in front of the real stand-ins (DynamoDB Local and fauxqs, started by the global
 * setup), called by the real SDK clients: what a role allows goes through and lands in the
 * stand-in; what it does not is refused with the error AWS sends, and recorded either way.
 */
const REGION = "us-east-1";
const ACCOUNT = "000000000000";
const suffix = randomBytes(4).toString("hex");
const table = `gw${suffix}-items`;
const queueName = `gw${suffix}-work`;
const tableArn = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}`;
const queueArn = `arn:aws:sqs:${REGION}:${ACCOUNT}:${queueName}`;

const dynamoEndpoint = process.env.AWS_ENDPOINT_URL_DYNAMODB ?? "";
const sqsEndpoint = process.env.AWS_ENDPOINT_URL_SQS ?? "";
const direct = { region: REGION, credentials: { accessKeyId: "setup", secretAccessKey: "setup" } };
const directDynamo = new DynamoDBClient({ ...direct, endpoint: dynamoEndpoint });
const directSqs = new SQSClient({ ...direct, endpoint: sqsEndpoint });

function principal(name: string, statements: unknown[]): GatewayPrincipal {
  return {
    name,
    arn: `arn:aws:iam::${ACCOUNT}:role/Hourglass-${name}`,
    policies: [{ name: `${name}-policy`, document: { Version: "2012-10-17", Statement: statements } }],
  };
}

/** Everything the tests need: item writes, the transaction's four kinds, the index, the queue. */
const full = principal("api", [
  {
    Effect: "Allow",
    Action: ["dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem", "dynamodb:Query"],
    Resource: [tableArn, `${tableArn}/index/*`],
  },
  { Effect: "Allow", Action: "sqs:SendMessage", Resource: queueArn },
]);
/** Can put items on the table, nothing more: no condition checks, no index, no queue. */
const writer = principal("writer", [{ Effect: "Allow", Action: "dynamodb:PutItem", Resource: tableArn }]);
/** Allowed everything on the table but explicitly denied PutItem. */
const denied = principal("denied", [
  { Effect: "Allow", Action: "dynamodb:*", Resource: tableArn },
  { Effect: "Deny", Action: "dynamodb:PutItem", Resource: "*" },
]);

let gateway: AwsGateway;
let queueUrl: string;

function dynamoAs(accessKeyId: string, url = gateway.url): DynamoDBClient {
  return new DynamoDBClient({
    region: REGION,
    endpoint: url,
    credentials: { accessKeyId, secretAccessKey: "unused" },
    maxAttempts: 1,
  });
}

function sqsAs(accessKeyId: string): SQSClient {
  return new SQSClient({
    region: REGION,
    endpoint: gateway.url,
    credentials: { accessKeyId, secretAccessKey: "unused" },
    useQueueUrlAsEndpoint: false,
    maxAttempts: 1,
  });
}

const item = (pk: string, status = "new") => ({ pk: { S: pk }, status: { S: status } });

beforeAll(async () => {
  await directDynamo.send(
    new CreateTableCommand({
      TableName: table,
      BillingMode: "PAY_PER_REQUEST",
      AttributeDefinitions: [
        { AttributeName: "pk", AttributeType: "S" },
        { AttributeName: "status", AttributeType: "S" },
      ],
      KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
      GlobalSecondaryIndexes: [
        {
          IndexName: "byStatus",
          KeySchema: [{ AttributeName: "status", KeyType: "HASH" }],
          Projection: { ProjectionType: "ALL" },
        },
      ],
    }),
  );
  queueUrl = (await directSqs.send(new CreateQueueCommand({ QueueName: queueName }))).QueueUrl ?? "";
  gateway = await startAwsGateway({
    region: REGION,
    accountId: ACCOUNT,
    dynamoEndpoint,
    sqsEndpoint,
    principals: new Map([
      ["AKIDAPI", full],
      ["AKIDWRITER", writer],
      ["AKIDDENIED", denied],
    ]),
    secrets: new Map(),
  });
});

afterAll(async () => {
  await gateway?.stop();
  await directDynamo.send(new DeleteTableCommand({ TableName: table }));
  await directSqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
});

describe("DynamoDB through the gateway", () => {
  it("forwards an allowed PutItem to DynamoDB Local and records it as allowed", async () => {
    await dynamoAs("AKIDAPI").send(new PutItemCommand({ TableName: table, Item: item("put-ok") }));
    const stored = await directDynamo.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: "put-ok" } } }),
    );
    expect(stored.Item?.status?.S).toBe("new");
    expect(gateway.calls()).toContainEqual(
      expect.objectContaining({
        principal: "api",
        service: "dynamodb",
        action: "dynamodb:PutItem",
        resource: tableArn,
        operation: "PutItem",
        decision: "Allowed",
      }),
    );
  });

  it("refuses a PutItem no policy allows with AWS's AccessDeniedException, and writes nothing", async () => {
    const attempt = principal("nobody", []);
    const refusing = await startAwsGateway({
      region: REGION,
      accountId: ACCOUNT,
      dynamoEndpoint,
      sqsEndpoint,
      principals: new Map([["AKIDNOBODY", attempt]]),
      secrets: new Map(),
    });
    try {
      const error = await dynamoAs("AKIDNOBODY", refusing.url)
        .send(new PutItemCommand({ TableName: table, Item: item("put-refused") }))
        .catch((e: unknown) => e);
      expect(error).toMatchObject({
        name: "AccessDeniedException",
        $metadata: { httpStatusCode: 400 },
        message: `User: arn:aws:sts::${ACCOUNT}:assumed-role/Hourglass-nobody/nobody is not authorized to perform: dynamodb:PutItem on resource: ${tableArn} because no identity-based policy allows the dynamodb:PutItem action`,
      });
      expect(refusing.denied()).toEqual([
        expect.objectContaining({
          principal: "nobody",
          action: "dynamodb:PutItem",
          decision: "ImplicitlyDenied",
        }),
      ]);
    } finally {
      await refusing.stop();
    }
    const stored = await directDynamo.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: "put-refused" } } }),
    );
    expect(stored.Item).toBeUndefined();
  });

  it("tells an explicit deny apart from a missing allow", async () => {
    const error = await dynamoAs("AKIDDENIED")
      .send(new PutItemCommand({ TableName: table, Item: item("put-denied") }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException" });
    expect((error as Error).message).toMatch(/with an explicit deny in an identity-based policy$/);
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({
        principal: "denied",
        action: "dynamodb:PutItem",
        decision: "ExplicitlyDenied",
      }),
    );
  });

  it("authorizes TransactWriteItems item by item: a condition check needs dynamodb:ConditionCheckItem", async () => {
    const transaction = (pk: string) =>
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: table, Item: item(pk) } },
          {
            ConditionCheck: {
              TableName: table,
              Key: { pk: { S: "put-ok" } },
              ConditionExpression: "attribute_exists(pk)",
            },
          },
        ],
      });
    await dynamoAs("AKIDAPI").send(transaction("tx-ok"));
    const stored = await directDynamo.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: "tx-ok" } } }),
    );
    expect(stored.Item).toBeDefined();

    const error = await dynamoAs("AKIDWRITER")
      .send(transaction("tx-refused"))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException" });
    expect((error as Error).message).toContain("dynamodb:ConditionCheckItem");
    const writerCalls = gateway
      .calls()
      .filter((c) => c.principal === "writer" && c.operation === "TransactWriteItems");
    expect(writerCalls).toEqual([
      expect.objectContaining({ action: "dynamodb:PutItem", resource: tableArn, decision: "Allowed" }),
      expect.objectContaining({
        action: "dynamodb:ConditionCheckItem",
        resource: tableArn,
        decision: "ImplicitlyDenied",
      }),
    ]);
    const refused = await directDynamo.send(
      new GetItemCommand({ TableName: table, Key: { pk: { S: "tx-refused" } } }),
    );
    expect(refused.Item).toBeUndefined();
  });

  it("authorizes a Query on an index against the index's ARN", async () => {
    await dynamoAs("AKIDAPI").send(new PutItemCommand({ TableName: table, Item: item("q-1", "queued") }));
    const query = new QueryCommand({
      TableName: table,
      IndexName: "byStatus",
      KeyConditionExpression: "#s = :s",
      ExpressionAttributeNames: { "#s": "status" },
      ExpressionAttributeValues: { ":s": { S: "queued" } },
    });
    const found = await dynamoAs("AKIDAPI").send(query);
    expect(found.Items?.map((i) => i.pk?.S)).toEqual(["q-1"]);

    const error = await dynamoAs("AKIDWRITER")
      .send(query)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException" });
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({
        principal: "writer",
        action: "dynamodb:Query",
        resource: `${tableArn}/index/byStatus`,
        decision: "ImplicitlyDenied",
      }),
    );
  });

  it("answers an unknown access key as AWS does, and records it", async () => {
    const error = await dynamoAs("AKIDSTRANGER")
      .send(new PutItemCommand({ TableName: table, Item: item("stranger") }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "UnrecognizedClientException", $metadata: { httpStatusCode: 400 } });
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({
        principal: "(unknown access key AKIDSTRANGER)",
        refusal: "UnrecognizedClient",
      }),
    );
  });
});

describe("SQS through the gateway", () => {
  it("needs sqs:SendMessage for SendMessageBatch, and delivers the batch to fauxqs when allowed", async () => {
    const batch = new SendMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: [
        { Id: "a", MessageBody: "first" },
        { Id: "b", MessageBody: "second" },
      ],
    });
    const sent = await sqsAs("AKIDAPI").send(batch);
    expect(sent.Successful).toHaveLength(2);
    const received = await directSqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(received.Messages?.map((m) => m.Body).sort()).toEqual(["first", "second"]);
    expect(gateway.calls()).toContainEqual(
      expect.objectContaining({
        principal: "api",
        action: "sqs:SendMessage",
        resource: queueArn,
        operation: "SendMessageBatch",
        decision: "Allowed",
      }),
    );

    const error = await sqsAs("AKIDWRITER")
      .send(batch)
      .catch((e: unknown) => e);
    // The SDK takes the code from x-amzn-query-error, as it does from SQS.
    expect(error).toMatchObject({ name: "AccessDenied", $metadata: { httpStatusCode: 403 } });
    expect((error as Error).message).toContain("is not authorized to perform: sqs:sendmessage on resource:");
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({
        principal: "writer",
        action: "sqs:SendMessage",
        operation: "SendMessageBatch",
      }),
    );
  });
});

describe("SQS's query protocol", () => {
  const post = (accessKeyId: string | undefined, form: Record<string, string>) =>
    fetch(gateway.url, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        ...(accessKeyId && {
          authorization: `AWS4-HMAC-SHA256 Credential=${accessKeyId}/20261205/${REGION}/sqs/aws4_request, SignedHeaders=host, Signature=0`,
        }),
      },
      body: new URLSearchParams(form).toString(),
    });

  it("is authorized on the queue the form names and refused in SQS's XML when IAM refuses", async () => {
    const refused = await post("AKIDWRITER", { Action: "SendMessage", QueueUrl: queueUrl, MessageBody: "x" });
    expect(refused.status).toBe(403);
    const xml = await refused.text();
    expect(xml).toContain("<Code>AccessDenied</Code>");
    expect(xml).toContain(`is not authorized to perform: sqs:sendmessage on resource: ${queueArn}`);

    // Allowed, but fauxqs speaks only the JSON protocol: said so, not silently mis-served.
    const allowed = await post("AKIDAPI", { Action: "SendMessage", QueueUrl: queueUrl, MessageBody: "x" });
    expect(allowed.status).toBe(400);
    expect(await allowed.text()).toContain("<Code>InvalidAction</Code>");
  });

  it("answers an unsigned request with MissingAuthenticationToken", async () => {
    const unsigned = await post(undefined, { Action: "ListQueues" });
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toContain("<Code>MissingAuthenticationToken</Code>");
  });
});
