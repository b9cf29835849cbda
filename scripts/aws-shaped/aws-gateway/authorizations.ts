import type { ServiceCall } from "./service-call.ts";
import { SERVICES } from "./services.ts";

/**
 * What IAM checks for one API call: the actions and resources AWS authorizes it as. Most calls are
 * one action on one resource; some are several (a transaction is authorized item by item, a batch
 * table by table, UpdateSchedule also passes a role). References:
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html
 * https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html
 * https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonsqs.html
 */
export interface Authorization {
  readonly action: string;
  readonly resource: string;
  /** Request context keys beyond the ones every call carries (e.g. `iam:PassedToService`). */
  readonly context?: Readonly<Record<string, string>>;
}

export interface ResourceNaming {
  readonly region: string;
  readonly accountId: string;
  /** A SecretId (ARN or name) → the secret's ARN. */
  secretArn(secretId: string): string;
  /** A StackName (name or stack id) → the stack id ARN AWS authorizes against. */
  stackArn(stackName: string): string;
}

type Input = Readonly<Record<string, unknown>>;

export function authorizationsFor(call: ServiceCall, naming: ResourceNaming): Authorization[] {
  const { region, accountId } = naming;
  const prefix = SERVICES[call.service].iamPrefix;
  const one = (resource: string): Authorization[] => [{ action: `${prefix}:${call.operation}`, resource }];
  switch (call.service) {
    case "dynamodb":
      return unique(dynamodb(call.operation, call.input, naming));
    case "sqs":
      return [sqs(call.operation, call.input, naming)];
    case "secretsmanager":
      return one(naming.secretArn(text(call.input.SecretId)));
    case "events":
      return unique(
        list(call.input.Entries).map((entry) => ({
          action: "events:PutEvents",
          resource: eventBusArn(text(entry.EventBusName) || "default", naming),
        })),
      );
    case "scheduler":
      return scheduler(call.operation, call.input, naming);
    case "cloudformation":
      return one(call.input.StackName ? naming.stackArn(text(call.input.StackName)) : "*");
    case "monitoring":
      return one("*");
    case "lambda":
      // Invoke is the one operation served, and IAM calls it InvokeFunction.
      return [
        {
          action: "lambda:InvokeFunction",
          resource: functionArn(text(call.input.FunctionName), text(call.input.Qualifier), region, accountId),
        },
      ];
  }
}

const TRANSACT_WRITE_ACTIONS: Readonly<Record<string, string>> = {
  Put: "dynamodb:PutItem",
  Update: "dynamodb:UpdateItem",
  Delete: "dynamodb:DeleteItem",
  ConditionCheck: "dynamodb:ConditionCheckItem",
};

function dynamodb(operation: string, input: Input, naming: ResourceNaming): Authorization[] {
  const table = (name: string) =>
    name.startsWith("arn:") ? name : `arn:aws:dynamodb:${naming.region}:${naming.accountId}:table/${name}`;
  switch (operation) {
    case "TransactWriteItems":
      return list(input.TransactItems).flatMap((item) =>
        Object.entries(item).flatMap(([kind, request]) => {
          const action = TRANSACT_WRITE_ACTIONS[kind];
          return action ? [{ action, resource: table(text(record(request).TableName)) }] : [];
        }),
      );
    case "TransactGetItems":
      return list(input.TransactItems).map((item) => ({
        action: "dynamodb:GetItem",
        resource: table(text(record(item.Get).TableName)),
      }));
    case "BatchGetItem":
    case "BatchWriteItem":
      return Object.keys(record(input.RequestItems)).map((name) => ({
        action: `dynamodb:${operation}`,
        resource: table(name),
      }));
    case "Query":
    case "Scan": {
      const base = table(text(input.TableName));
      const index = text(input.IndexName);
      return [{ action: `dynamodb:${operation}`, resource: index ? `${base}/index/${index}` : base }];
    }
    default: {
      const named = text(input.TableName) || text(input.ResourceArn);
      return [{ action: `dynamodb:${operation}`, resource: named ? table(named) : "*" }];
    }
  }
}

/** The batch operations are authorized as their single-message actions. */
const SQS_ACTIONS: Readonly<Record<string, string>> = {
  SendMessageBatch: "sqs:SendMessage",
  DeleteMessageBatch: "sqs:DeleteMessage",
  ChangeMessageVisibilityBatch: "sqs:ChangeMessageVisibility",
};

function sqs(operation: string, input: Input, naming: ResourceNaming): Authorization {
  const action = SQS_ACTIONS[operation] ?? `sqs:${operation}`;
  // A queue's ARN ends in its name, which is the last path segment of its URL.
  const name = text(input.QueueName) || (text(input.QueueUrl).split("/").pop() ?? "");
  return { action, resource: name ? `arn:aws:sqs:${naming.region}:${naming.accountId}:${name}` : "*" };
}

function scheduler(operation: string, input: Input, naming: ResourceNaming): Authorization[] {
  const group = text(input.GroupName) || "default";
  const schedule = `arn:aws:scheduler:${naming.region}:${naming.accountId}:schedule/${group}/${text(input.Name)}`;
  const authorizations: Authorization[] = [{ action: `scheduler:${operation}`, resource: schedule }];
  const role = text(record(input.Target).RoleArn);
  // Scheduler assumes the target's role, so setting it is passing it, which IAM checks too.
  if (operation === "UpdateSchedule" && role) {
    authorizations.push({
      action: "iam:PassRole",
      resource: role,
      context: { "iam:PassedToService": "scheduler.amazonaws.com" },
    });
  }
  return authorizations;
}

function eventBusArn(name: string, naming: ResourceNaming): string {
  return name.startsWith("arn:")
    ? name
    : `arn:aws:events:${naming.region}:${naming.accountId}:event-bus/${name}`;
}

/** A function name, partial ARN or ARN, with a qualifier given apart or inside it. */
export function functionArn(name: string, qualifier: string, region: string, accountId: string): string {
  const base = name.startsWith("arn:")
    ? name
    : /^\d{12}:function:/.test(name)
      ? `arn:aws:lambda:${region}:${name}`
      : `arn:aws:lambda:${region}:${accountId}:function:${name}`;
  return qualifier && !base.endsWith(`:${qualifier}`) ? `${base}:${qualifier}` : base;
}

function unique(authorizations: Authorization[]): Authorization[] {
  const seen = new Set<string>();
  return authorizations.filter(({ action, resource }) => {
    const key = `${action} ${resource}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function record(value: unknown): Input {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Input) : {};
}

function list(value: unknown): Input[] {
  return Array.isArray(value) ? value.map(record) : [];
}
