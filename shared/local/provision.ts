import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { HourglassConfig } from "../config.ts";
import {
  EVENTS_TABLE,
  LEASES_TABLE,
  LEDGER_TABLE,
  type QueueDefinition,
  SCHEDULES_TABLE,
  type TableDefinition,
  WORK_QUEUE,
} from "../resources.ts";

/** Creates a table from its definition; an existing table is left as it is. */
export async function ensureTable(
  client: DynamoDBClient,
  name: string,
  table: TableDefinition,
): Promise<void> {
  const attributes = new Map<string, string>([[table.partitionKey.name, table.partitionKey.type]]);
  if (table.sortKey) attributes.set(table.sortKey.name, table.sortKey.type);
  for (const index of table.indexes) {
    attributes.set(index.partitionKey.name, index.partitionKey.type);
    attributes.set(index.sortKey.name, index.sortKey.type);
  }
  const input: CreateTableCommandInput = {
    TableName: name,
    BillingMode: "PAY_PER_REQUEST",
    AttributeDefinitions: [...attributes].map(([AttributeName, AttributeType]) => ({
      AttributeName,
      AttributeType: AttributeType as "S" | "N",
    })),
    KeySchema: [
      { AttributeName: table.partitionKey.name, KeyType: "HASH" },
      ...(table.sortKey ? [{ AttributeName: table.sortKey.name, KeyType: "RANGE" as const }] : []),
    ],
  };
  if (table.indexes.length > 0) {
    input.GlobalSecondaryIndexes = table.indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey.name, KeyType: "HASH" },
        { AttributeName: index.sortKey.name, KeyType: "RANGE" },
      ],
      Projection: { ProjectionType: index.projection },
    }));
  }
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    return;
  }
  for (let i = 0; i < 100; i++) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
    if (Table?.TableStatus === "ACTIVE") break;
    await new Promise((done) => setTimeout(done, 100));
  }
  if (table.ttlAttribute) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
      }),
    );
  }
}

/** Creates a queue and its dead-letter queue with the redrive policy; returns the queue's URL. */
export async function ensureQueue(client: SQSClient, name: string, queue: QueueDefinition): Promise<string> {
  const dlq = await client.send(
    new CreateQueueCommand({
      QueueName: `${name}${queue.dlq.suffix}`,
      Attributes: { MessageRetentionPeriod: String(queue.dlq.retentionSeconds) },
    }),
  );
  const dlqAttributes = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl!, AttributeNames: ["QueueArn"] }),
  );
  const created = await client.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: String(queue.visibilityTimeoutSeconds),
        MessageRetentionPeriod: String(queue.retentionSeconds),
        RedrivePolicy: JSON.stringify({
          deadLetterTargetArn: dlqAttributes.Attributes!.QueueArn,
          maxReceiveCount: queue.dlq.maxReceiveCount,
        }),
      },
    }),
  );
  return created.QueueUrl!;
}

export interface ProvisionTargets {
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly config: Pick<HourglassConfig, "tables" | "queue">;
}

/** Everything Hourglass needs, created idempotently. Returns the work queue's URL. */
export async function provision({ dynamo, sqs, config }: ProvisionTargets): Promise<string> {
  await Promise.all([
    ensureTable(dynamo, config.tables.events, EVENTS_TABLE),
    ensureTable(dynamo, config.tables.leases, LEASES_TABLE),
    ensureTable(dynamo, config.tables.ledger, LEDGER_TABLE),
    ensureTable(dynamo, config.tables.schedules, SCHEDULES_TABLE),
  ]);
  return ensureQueue(sqs, config.queue.name, WORK_QUEUE);
}
