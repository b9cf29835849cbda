import { randomBytes } from "node:crypto";
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  type DynamoDBClient,
  ResourceInUseException,
  UpdateTimeToLiveCommand,
} from "@aws-sdk/client-dynamodb";
import { CreateQueueCommand, GetQueueAttributesCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { TemplateShapeError } from "./errors.ts";
import { type Binding, type ResolveContext, resolve, resolveString } from "./intrinsics.ts";
import type { CacheSpec, StackTemplate, TemplateResource } from "./template.ts";

export interface DeployTargets {
  readonly region: string;
  readonly accountId: string;
  /** Prefix of every physical name, so several stacks share one DynamoDB Local and one fauxqs. */
  readonly stackName: string;
  /** Clients straight to the stand-ins: deploying is CloudFormation's work, not a function's call. */
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
  /** Starts the cache with the password CloudFormation would have set from the secret. */
  readonly startCache?: (spec: CacheSpec, password: string) => Promise<{ host: string; port: number }>;
}

export interface Deployment {
  readonly context: ResolveContext;
  /** Secret ARN → SecretString, as Secrets Manager would return it. */
  readonly secrets: ReadonlyMap<string, string>;
  /** Resolved stack outputs. */
  readonly outputs: Readonly<Record<string, string>>;
  readonly queueUrl: (logicalId: string) => string;
  readonly queueArn: (logicalId: string) => string;
}

/**
 * What `cdk deploy` would create, on the stand-ins: the tables, the queues (dead-letter queues
 * first, so the redrive can name them), the secrets with generated values, the cache; and a
 * binding for every resource so that each `Ref` and `Fn::GetAtt` in the template resolves to the
 * local value (a fixed physical name per resource; ARNs in the account and region given).
 */
export async function deployStack(template: StackTemplate, targets: DeployTargets): Promise<Deployment> {
  const { region, accountId, stackName } = targets;
  const bindings = new Map<string, Binding>();
  const context: ResolveContext = { region, accountId, stackName, bindings };
  const arn = (service: string, resource: string, global = false) =>
    `arn:aws:${service}:${global ? "" : region}:${accountId}:${resource}`;
  const physical = (logicalId: string, max = 64) => `${stackName}-${logicalId}`.slice(0, max);

  for (const [logicalId, resource] of Object.entries(template.resources))
    bindings.set(logicalId, defaultBinding(logicalId, resource, physical, arn));

  const secrets = new Map<string, string>();
  for (const [logicalId, resource] of Object.entries(template.resources)) {
    if (resource.Type !== "AWS::SecretsManager::Secret") continue;
    secrets.set(bindings.get(logicalId)!.ref, secretValue(logicalId, resource));
  }

  for (const [logicalId, resource] of Object.entries(template.resources)) {
    if (resource.Type === "AWS::DynamoDB::GlobalTable" || resource.Type === "AWS::DynamoDB::Table")
      await createTable(targets.dynamo, bindings.get(logicalId)!.ref, resource);
  }

  const queues = [...template.queues].sort(
    (a, b) => Number("RedrivePolicy" in a.properties) - Number("RedrivePolicy" in b.properties),
  );
  for (const queue of queues) {
    const name = physical(queue.logicalId, 80);
    const attributes = queueAttributes(queue.properties, context, queue.logicalId);
    const created = await targets.sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: attributes }),
    );
    const url = created.QueueUrl!;
    const described = await targets.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ["QueueArn"] }),
    );
    const queueArn = described.Attributes?.QueueArn ?? arn("sqs", name);
    bindings.set(queue.logicalId, {
      ref: url,
      attributes: { Arn: queueArn, QueueName: name, QueueUrl: url },
    });
  }

  if (template.cache && targets.startCache) {
    const secretArn = bindings.get(template.cache.secretLogicalId)?.ref ?? "";
    const password = (JSON.parse(secrets.get(secretArn) ?? "{}") as { redisAuthToken?: string })
      .redisAuthToken;
    if (!password) throw new TemplateShapeError(template.cache.logicalId, "its secret has no redisAuthToken");
    const { host, port } = await targets.startCache(template.cache, password);
    const endpoint = { Address: host, Port: String(port) };
    const attributes: Record<string, string> = {};
    for (const name of [
      "PrimaryEndPoint",
      "ReaderEndPoint",
      "ConfigurationEndPoint",
      "Endpoint",
      "ReaderEndpoint",
    ]) {
      attributes[`${name}.Address`] = endpoint.Address;
      attributes[`${name}.Port`] = endpoint.Port;
    }
    const current = bindings.get(template.cache.logicalId)!;
    bindings.set(template.cache.logicalId, {
      ref: current.ref,
      attributes: { ...current.attributes, ...attributes },
    });
  }

  const outputs = Object.fromEntries(
    Object.entries(template.outputs).map(([name, output]) => [
      name,
      resolveString(output.Value, context, `Outputs.${name}`),
    ]),
  );
  const queueBinding = (logicalId: string) => {
    const binding = bindings.get(logicalId);
    if (!binding?.attributes.QueueUrl) throw new TemplateShapeError(logicalId, "not a queue");
    return binding;
  };
  return {
    context,
    secrets,
    outputs,
    queueUrl: (logicalId) => queueBinding(logicalId).ref,
    queueArn: (logicalId) => queueBinding(logicalId).attributes.Arn!,
  };
}

/** The physical id and attributes CloudFormation would give a resource of this type. */
function defaultBinding(
  logicalId: string,
  resource: TemplateResource,
  physical: (logicalId: string, max?: number) => string,
  arn: (service: string, resource: string, global?: boolean) => string,
): Binding {
  const p = resource.Properties ?? {};
  const name = physical(logicalId);
  switch (resource.Type) {
    case "AWS::DynamoDB::GlobalTable":
    case "AWS::DynamoDB::Table":
      return { ref: name, attributes: { Arn: arn("dynamodb", `table/${name}`), StreamArn: "" } };
    case "AWS::SecretsManager::Secret": {
      const secretArn = arn("secretsmanager", `secret:${physical(logicalId, 40)}-${suffix(6)}`);
      return { ref: secretArn, attributes: { Id: secretArn } };
    }
    case "AWS::Events::EventBus": {
      const bus = typeof p.Name === "string" ? p.Name : name;
      return { ref: bus, attributes: { Arn: arn("events", `event-bus/${bus}`), Name: bus } };
    }
    case "AWS::Lambda::Function":
      return { ref: name, attributes: { Arn: arn("lambda", `function:${name}`) } };
    case "AWS::IAM::Role":
      return {
        ref: name,
        attributes: { Arn: arn("iam", `role/${name}`, true), RoleId: `AROA${suffix(17)}` },
      };
    case "AWS::Scheduler::Schedule": {
      const schedule = typeof p.Name === "string" ? p.Name : name;
      const group = typeof p.GroupName === "string" ? p.GroupName : "default";
      return { ref: schedule, attributes: { Arn: arn("scheduler", `schedule/${group}/${schedule}`) } };
    }
    case "AWS::Scheduler::ScheduleGroup":
      return { ref: name, attributes: { Arn: arn("scheduler", `schedule-group/${name}`) } };
    case "AWS::Logs::LogGroup":
      return { ref: name, attributes: { Arn: arn("logs", `log-group:${name}:*`) } };
    case "AWS::SNS::Topic":
      return { ref: arn("sns", name), attributes: { TopicArn: arn("sns", name), TopicName: name } };
    case "AWS::ApiGateway::RestApi":
      return { ref: suffix(10).toLowerCase(), attributes: { RootResourceId: suffix(10).toLowerCase() } };
    case "AWS::ApiGateway::Stage":
      return { ref: String(p.StageName ?? "prod"), attributes: {} };
    case "AWS::ApiGatewayV2::Api":
      return { ref: suffix(10).toLowerCase(), attributes: { ApiEndpoint: "" } };
    case "AWS::CloudWatch::Alarm":
      return { ref: name, attributes: { Arn: arn("cloudwatch", `alarm:${name}`) } };
    case "AWS::ElastiCache::ServerlessCache":
    case "AWS::ElastiCache::ReplicationGroup":
      return { ref: name, attributes: { Arn: arn("elasticache", `replicationgroup:${name}`) } };
    default:
      return { ref: name, attributes: { Arn: arn(serviceOf(resource.Type), name) } };
  }
}

function serviceOf(type: string): string {
  return (type.split("::")[1] ?? "unknown").toLowerCase();
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const PUNCTUATION = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

function suffix(length: number): string {
  return [...randomBytes(length)].map((byte) => ALPHANUMERIC[byte % ALPHANUMERIC.length]).join("");
}

/** The secret's value as Secrets Manager would generate it from `GenerateSecretString`. */
function secretValue(logicalId: string, resource: TemplateResource): string {
  const p = resource.Properties ?? {};
  if (typeof p.SecretString === "string") return p.SecretString;
  const generate = p.GenerateSecretString as
    | {
        SecretStringTemplate?: string;
        GenerateStringKey?: string;
        PasswordLength?: number;
        ExcludePunctuation?: boolean;
      }
    | undefined;
  if (!generate)
    throw new TemplateShapeError(logicalId, "a secret with neither SecretString nor GenerateSecretString");
  const alphabet = generate.ExcludePunctuation ? ALPHANUMERIC : ALPHANUMERIC + PUNCTUATION;
  const length = generate.PasswordLength ?? 32;
  const password = [...randomBytes(length)].map((byte) => alphabet[byte % alphabet.length]).join("");
  if (!generate.GenerateStringKey) return password;
  const value = JSON.parse(generate.SecretStringTemplate ?? "{}") as Record<string, string>;
  value[generate.GenerateStringKey] = password;
  return JSON.stringify(value);
}

async function createTable(client: DynamoDBClient, name: string, resource: TemplateResource): Promise<void> {
  const p = resource.Properties ?? {};
  const indexes = (p.GlobalSecondaryIndexes as CreateTableCommandInput["GlobalSecondaryIndexes"]) ?? [];
  const input: CreateTableCommandInput = {
    TableName: name,
    AttributeDefinitions: p.AttributeDefinitions as CreateTableCommandInput["AttributeDefinitions"],
    KeySchema: p.KeySchema as CreateTableCommandInput["KeySchema"],
    BillingMode: "PAY_PER_REQUEST",
    ...(indexes.length > 0 && {
      GlobalSecondaryIndexes: indexes.map((index) => ({
        IndexName: index.IndexName,
        KeySchema: index.KeySchema,
        Projection: index.Projection,
      })),
    }),
  };
  try {
    await client.send(new CreateTableCommand(input));
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    return; // Kept from an earlier run of the same stack name.
  }
  const ttl = p.TimeToLiveSpecification as { AttributeName?: string; Enabled?: boolean } | undefined;
  if (ttl?.Enabled && ttl.AttributeName) {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: name,
        TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true },
      }),
    );
  }
}

/** The queue's CloudFormation properties as CreateQueue attributes (names match; values are strings). */
function queueAttributes(
  properties: Readonly<Record<string, unknown>>,
  context: ResolveContext,
  logicalId: string,
): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const name of [
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "MaximumMessageSize",
    "FifoQueue",
    "ContentBasedDeduplication",
  ]) {
    if (properties[name] !== undefined) attributes[name] = String(properties[name]);
  }
  if (properties.RedrivePolicy !== undefined)
    attributes.RedrivePolicy = JSON.stringify(
      resolve(properties.RedrivePolicy, context, `${logicalId}.RedrivePolicy`),
    );
  return attributes;
}
