import { join } from "node:path";
import { Duration, RemovalPolicy } from "aws-cdk-lib";
import * as apigateway from "aws-cdk-lib/aws-apigateway";
import * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import { HttpIamAuthorizer } from "aws-cdk-lib/aws-apigatewayv2-authorizers";
import { HttpLambdaIntegration } from "aws-cdk-lib/aws-apigatewayv2-integrations";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as ec2 from "aws-cdk-lib/aws-ec2";
import * as events from "aws-cdk-lib/aws-events";
import * as eventsTargets from "aws-cdk-lib/aws-events-targets";
import * as iam from "aws-cdk-lib/aws-iam";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { SqsEventSource } from "aws-cdk-lib/aws-lambda-event-sources";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as targets from "aws-cdk-lib/aws-scheduler-targets";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { WORK_QUEUE } from "../../shared/resources.ts";
import { DISPATCH_SCHEDULE_DESCRIPTION } from "../../shared/schedules/eventbridge.ts";
import { functionBundling, RUNTIME } from "./bundling.ts";
import { FUNCTION_DEFAULTS, type FunctionEnvironment, type FunctionRole } from "./defaults.ts";
import { createLogGroup, type LogSettings } from "./log-groups.ts";
import type { HourglassOverrides } from "./props.ts";

const ROOT = join(import.meta.dirname, "..", "..");

export interface FunctionSettings {
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroup: ec2.SecurityGroup;
  readonly environment: FunctionEnvironment;
  readonly handlersModule: string;
  readonly logs: LogSettings;
  /** The user's overrides for this function (see `HourglassOverrides`). */
  readonly overrides?: HourglassOverrides["functions"];
  /** Concurrency reserved for this function; none when undefined. */
  readonly reservedConcurrency?: number | undefined;
}

/** The work queue, encrypted, with its dead-letter queue and redrive, from the shared definition. */
export function createQueues(scope: Construct, overrides: HourglassOverrides = {}) {
  const deadLetterQueue = new sqs.Queue(scope, "WorkDlq", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.seconds(WORK_QUEUE.dlq.retentionSeconds),
    ...overrides.deadLetterQueue,
  });
  const queue = new sqs.Queue(scope, "WorkQueue", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    visibilityTimeout: Duration.seconds(WORK_QUEUE.visibilityTimeoutSeconds),
    retentionPeriod: Duration.seconds(WORK_QUEUE.retentionSeconds),
    ...overrides.queue,
    deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: WORK_QUEUE.dlq.maxReceiveCount },
  });
  return { queue, deadLetterQueue };
}

/**
 * A Lambda function from one of `functions/`: `RUNTIME` on arm64, bundled by the project's own
 * esbuild (no Docker) as `functionBundling` says.
 */
export function createFunction(
  scope: Construct,
  id: string,
  entry: FunctionRole,
  settings: FunctionSettings,
): nodejs.NodejsFunction {
  const { environment: extraEnvironment, ...overrides } = settings.overrides ?? {};
  return new nodejs.NodejsFunction(scope, id, {
    runtime: RUNTIME,
    architecture: lambda.Architecture.ARM_64,
    ...FUNCTION_DEFAULTS[entry],
    logGroup: createLogGroup(scope, `${id}Logs`, settings.logs),
    tracing: lambda.Tracing.ACTIVE,
    depsLockFilePath: join(ROOT, "package-lock.json"),
    projectRoot: ROOT,
    ...overrides,
    ...(settings.reservedConcurrency !== undefined && {
      reservedConcurrentExecutions: settings.reservedConcurrency,
    }),
    // What the code depends on comes last, so no override can change it.
    entry: join(ROOT, "functions", entry, "index.ts"),
    handler: "handler",
    vpc: settings.vpc,
    vpcSubnets: settings.subnets,
    securityGroups: [settings.securityGroup],
    environment: {
      ...extraEnvironment,
      // No NODE_OPTIONS of Hourglass's: source maps stay off unless the user's environment turns
      // them on (see SOURCE_MAPS).
      ...(settings.environment as Record<string, string>),
    },
    bundling: functionBundling(settings.handlersModule),
  });
}

/**
 * DynamoDB actions by what the code does with a table. Items inside TransactWriteItems are
 * authorized as their own PutItem/UpdateItem/DeleteItem, so no transaction action appears.
 * Nothing in Hourglass scans, so no role can; only the API batch-writes (events whose ids it made),
 * and only the API deletes (schedules).
 */
export const TABLE_ACCESS = {
  /** EventJournal: conditional puts and updates, point and batch reads, index queries. */
  journal: [
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
  ],
  /** LeaseService (and the webhook signing rotation state, and type limits with their index): conditional updates and point reads. */
  leases: ["dynamodb:GetItem", "dynamodb:UpdateItem"],
  /** The worker only reads a tenant's webhook signing state. */
  signingState: ["dynamodb:GetItem"],
  /**
   * StockLedger: transactions of puts and updates, reads (batch reads of the counters' sequence
   * numbers before a transaction, and of reservations for the hold admission), history queries,
   * snapshots.
   */
  ledger: [
    "dynamodb:BatchGetItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
  ],
  /** ScheduleStore: conditional puts and updates, transactions with the per-tenant counter, reads, due queries. */
  schedules: [
    "dynamodb:DeleteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
  ],
  /**
   * The materializer (in the dispatcher): due schedules from the index, a schedule read again when
   * its conditional advance lost, and the advance itself.
   */
  materialize: ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"],
  /**
   * A batch of events whose ids Hourglass generated (the client sent none) is written with
   * BatchWriteItem: no earlier event can carry such an id (EventJournal.createMany).
   */
  batchCreate: ["dynamodb:BatchWriteItem"],
  /** `/health` asks DynamoDB to describe the events table. */
  health: ["dynamodb:DescribeTable"],
} as const;

/** Grants exactly `actions` on one table, and on its indexes when it has some and is queried. */
export function grantTable(
  fn: lambda.IFunction,
  table: dynamodb.ITableV2,
  actions: readonly string[],
  hasIndexes = false,
) {
  const queried = hasIndexes && actions.includes("dynamodb:Query");
  fn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: [...actions],
      resources: queried ? [table.tableArn, `${table.tableArn}/index/*`] : [table.tableArn],
    }),
  );
}

export function grantSecrets(fn: lambda.IFunction, secrets: readonly secretsmanager.ISecret[]) {
  for (const secret of secrets) secret.grantRead(fn);
}

/**
 * EventBridge Scheduler runs the dispatcher every minute, with retries and a dead-letter queue; or,
 * with `events-rule` (LocalStack, whose Scheduler never fires), an EventBridge rule does, with the
 * same retries and dead-letter queue.
 *
 * The target's retries are the scheduler's own, for an invocation Lambda did not accept (the
 * asynchronous Invoke call failed); they never re-run a tick that ran and failed
 * (`configureDispatcherInvocations`). Two of them within the event age of 60 s, the least either
 * service accepts, keep a tick that is still worth running: after a minute the next one is due.
 */
export function createDispatchSchedule(
  scope: Construct,
  dispatcher: lambda.IFunction,
  trigger: "scheduler" | "events-rule",
) {
  const deadLetterQueue = new sqs.Queue(scope, "ScheduleDlq", {
    encryption: sqs.QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
  if (trigger === "events-rule") {
    const rule = new events.Rule(scope, "DispatchRule", {
      schedule: events.Schedule.rate(Duration.minutes(1)),
      description: DISPATCH_SCHEDULE_DESCRIPTION,
      targets: [
        new eventsTargets.LambdaFunction(dispatcher, {
          retryAttempts: 2,
          maxEventAge: Duration.minutes(1),
          deadLetterQueue,
        }),
      ],
    });
    return { schedule: undefined, rule, deadLetterQueue };
  }
  const schedule = new scheduler.Schedule(scope, "DispatchSchedule", {
    schedule: scheduler.ScheduleExpression.rate(Duration.minutes(1)),
    // `hourglass schedules import --from-eventbridge` knows the schedule by it and skips it.
    description: DISPATCH_SCHEDULE_DESCRIPTION,
    target: new targets.LambdaInvoke(dispatcher, {
      retryAttempts: 2,
      maxEventAge: Duration.minutes(1),
      deadLetterQueue,
    }),
  });
  return { schedule, rule: undefined, deadLetterQueue };
}

/**
 * The dispatcher's own asynchronous invocations (EventBridge Scheduler and EventBridge rules invoke
 * Lambda asynchronously): no retry of a failed tick, and a tick not started within a minute is
 * dropped. Lambda's defaults (2 retries, one and two minutes later; throttled events kept up to
 * 6 hours) would run stale ticks beside the fresh ones; the next tick, a minute later, claims
 * whatever a failed or dropped one left, and `DispatcherMissedRuns` alarms when ticks stop.
 */
export function configureDispatcherInvocations(dispatcher: lambda.Function) {
  dispatcher.configureAsyncInvoke({ retryAttempts: 0, maxEventAge: Duration.seconds(60) });
}

export function attachWorker(worker: lambda.Function, queue: sqs.IQueue, maxConcurrency: number) {
  worker.addEventSource(
    new SqsEventSource(queue, { batchSize: 10, reportBatchItemFailures: true, maxConcurrency }),
  );
}

/**
 * The REST API: IAM authorization on every method (API keys too, when asked), throttling,
 * access logs, and one Lambda proxy behind all routes.
 *
 * API Gateway writes a REST API's logs through one role per account and region (its account
 * setting, `AWS::ApiGateway::Account`), not per API. A stack that sets it replaces whatever another
 * stack or team set, and CloudFormation gives the setting no owner. A stage with logging cannot deploy
 * without it, so the construct sets it unless told not to (`apiGatewayCloudWatchRole`), and keeps the
 * role and the setting when the stack is deleted, since other APIs in the account log through it.
 */
export function createApi(
  scope: Construct,
  handler: lambda.IFunction,
  options: {
    apiKeys: boolean;
    throttle: { rateLimit: number; burstLimit: number };
    /** Each API key's own limit (the usage plan's, which API Gateway applies per key). */
    keyThrottle: { rateLimit: number; burstLimit: number };
    logs: LogSettings;
    cloudWatchRole: boolean;
  },
) {
  const accessLogs = createLogGroup(scope, "ApiAccessLogs", options.logs);
  const api = new apigateway.LambdaRestApi(scope, "Api", {
    handler,
    proxy: true,
    description: "Hourglass API",
    cloudWatchRole: options.cloudWatchRole,
    ...(options.cloudWatchRole && { cloudWatchRoleRemovalPolicy: RemovalPolicy.RETAIN }),
    defaultMethodOptions: {
      authorizationType: apigateway.AuthorizationType.IAM,
      apiKeyRequired: options.apiKeys,
    },
    deployOptions: {
      stageName: "api",
      throttlingRateLimit: options.throttle.rateLimit,
      throttlingBurstLimit: options.throttle.burstLimit,
      accessLogDestination: new apigateway.LogGroupLogDestination(accessLogs),
      accessLogFormat: apigateway.AccessLogFormat.jsonWithStandardFields(),
      loggingLevel: apigateway.MethodLoggingLevel.ERROR,
      tracingEnabled: true,
      metricsEnabled: true,
    },
  });
  // The stage's limit is shared by every caller; a usage plan's is applied to each API key on its
  // own. So with a key per tenant, below the stage's limit, no tenant can take all of it.
  let usagePlan: apigateway.UsagePlan | undefined;
  if (options.apiKeys) {
    usagePlan = api.addUsagePlan("UsagePlan", {
      description: "Hourglass: each API key's own limit (give each tenant its own key)",
      throttle: options.keyThrottle,
      apiStages: [{ api, stage: api.deploymentStage }],
    });
    usagePlan.addApiKey(api.addApiKey("DefaultKey"));
  }
  return { api, usagePlan };
}

/**
 * The lean profile's API: an HTTP API ($1.00 per million requests against the REST API's $3.50)
 * with IAM authorization on every route, stage throttling and JSON access logs. Payload format 1.0,
 * so the function sees the caller's IAM identity where it does behind the REST API. No API keys.
 */
export function createHttpApi(
  scope: Construct,
  handler: lambda.IFunction,
  options: { throttle: { rateLimit: number; burstLimit: number }; logs: LogSettings },
) {
  const accessLogs = createLogGroup(scope, "ApiAccessLogs", options.logs);
  const api = new apigwv2.HttpApi(scope, "HttpApi", {
    description: "Hourglass API",
    createDefaultStage: false,
    defaultAuthorizer: new HttpIamAuthorizer(),
    defaultIntegration: new HttpLambdaIntegration("Function", handler, {
      payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_1_0,
    }),
  });
  const stage = api.addStage("DefaultStage", {
    stageName: "$default",
    autoDeploy: true,
    throttle: options.throttle,
    accessLogSettings: {
      destination: new apigwv2.LogGroupLogDestination(accessLogs),
      format: apigateway.AccessLogFormat.jsonWithStandardFields(),
    },
  });
  return { api, stage };
}
