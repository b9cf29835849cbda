import { Annotations, RemovalPolicy, Stack } from "aws-cdk-lib";
import type * as apigateway from "aws-cdk-lib/aws-apigateway";
import type * as apigwv2 from "aws-cdk-lib/aws-apigatewayv2";
import type * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import * as ec2 from "aws-cdk-lib/aws-ec2";
import * as events from "aws-cdk-lib/aws-events";
import * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as scheduler from "aws-cdk-lib/aws-scheduler";
import * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import { Construct } from "constructs";
import {
  EVENTS_TABLE,
  LEASES_TABLE,
  LEDGER_TABLE,
  SCHEDULES_TABLE,
  type TableDefinition,
  WORK_QUEUE,
} from "../../shared/resources.ts";
import {
  attachWorker,
  configureDispatcherInvocations,
  createApi,
  createDispatchSchedule,
  createFunction,
  createHttpApi,
  createQueues,
  grantSecrets,
  grantTable,
  TABLE_ACCESS,
} from "./compute.ts";
import { type Cache, createCache, createTable } from "./data.ts";
import { DEFAULTS, type FunctionEnvironment, type FunctionRole, resolveProps } from "./defaults.ts";
import { admitToNat, finishNatInstances } from "./nat-instance.ts";
import { createNetwork } from "./network.ts";
import { createObservability } from "./observability.ts";
import type { Egress, HourglassProps } from "./props.ts";
import { validateProps } from "./validate.ts";

export type { DispatchTrigger, Egress, HourglassProps, Profile } from "./props.ts";

/**
 * Everything Hourglass is on AWS, in one construct: the VPC, Valkey, the DynamoDB tables, the
 * work queue, the three functions, the dispatcher's schedule, the API, alarms and a dashboard.
 * Secure by default (TLS, AUTH, encryption at rest, IAM authorization, a DLQ everywhere).
 */
export class Hourglass extends Construct {
  public readonly vpc: ec2.IVpc;
  public readonly eventsTable: dynamodb.TableV2;
  public readonly leasesTable: dynamodb.TableV2;
  public readonly ledgerTable: dynamodb.TableV2;
  public readonly schedulesTable: dynamodb.TableV2;
  /** Undefined with `redis: { kind: "external" }`. */
  public readonly cache: Cache | undefined;
  /** One per function, each with egress limited to what that function reaches. */
  public readonly securityGroups: {
    readonly api: ec2.SecurityGroup;
    readonly dispatcher: ec2.SecurityGroup;
    readonly worker: ec2.SecurityGroup;
  };
  public readonly queue: sqs.Queue;
  public readonly deadLetterQueue: sqs.Queue;
  public readonly webhookSecret: secretsmanager.Secret;
  public readonly apiFunction: lambda.Function;
  public readonly dispatcherFunction: lambda.Function;
  public readonly workerFunction: lambda.Function;
  /** The user's functions that handle event types, as given in the props. */
  public readonly handlerFunctions: Readonly<Record<string, lambda.IFunction>>;
  /**
   * The NAT instance (`egress: "nat-instance"`): `nat.connections.allowFrom(group, port)` lets
   * traffic on another port out (it admits only the functions' HTTPS and HTTP).
   */
  public readonly nat: ec2.NatInstanceProviderV2 | undefined;
  /** How the functions reach the internet; with your own `vpc`, what its subnets provide. */
  public readonly egress: Egress | "vpc";
  /** False when webhooks to public URLs cannot be delivered (`egress: "none"`). */
  public readonly hasInternetEgress: boolean;
  /** The dispatcher's EventBridge Scheduler schedule (`dispatchTrigger: "scheduler"`). */
  public readonly schedule: scheduler.Schedule | undefined;
  /** The dispatcher's EventBridge rule (`dispatchTrigger: "events-rule"`, for LocalStack). */
  public readonly dispatchRule: events.Rule | undefined;
  /** The REST API (standard profile). */
  public readonly api: apigateway.RestApi | undefined;
  /** With `apiKeys`: `usagePlan.addApiKey(api.addApiKey("TenantA"))` gives a tenant its own limit. */
  public readonly usagePlan: apigateway.UsagePlan | undefined;
  /** The HTTP API (lean profile). */
  public readonly httpApi: apigwv2.HttpApi | undefined;
  /** The base URL for the CLI and client (`HOURGLASS_URL`). */
  public readonly apiUrl: string;
  /** The roles the admin routes admit, and that `grantOperate` was given to. */
  public readonly admins: readonly iam.IRole[];
  public readonly alarms: Record<string, cloudwatch.Alarm>;
  public readonly dashboard: cloudwatch.Dashboard;
  /** The bus the transitions `notifications.transitions` names are put on; undefined when it names none. */
  public readonly eventBus: events.IEventBus | undefined;

  constructor(scope: Construct, id: string, props: HourglassProps = {}) {
    super(scope, id);
    validateProps(props);
    const resolved = resolveProps(props);
    const { production, lean, redis: redisChoice, overrides } = resolved;
    const logSettings = { retention: resolved.logRetention, production };

    this.handlerFunctions = resolved.handlerFunctions;
    const handlerFunctions = Object.entries(this.handlerFunctions);
    const transitions = [...new Set(props.notifications?.transitions ?? [])];
    if (props.vpc) {
      this.vpc = props.vpc;
      this.nat = undefined;
      this.egress = "vpc";
      this.hasInternetEgress = props.vpc.privateSubnets.length > 0;
    } else {
      this.egress = resolved.egress ?? "nat-gateway-per-az";
      this.hasInternetEgress = this.egress !== "none";
      ({ vpc: this.vpc, nat: this.nat } = createNetwork(this, {
        egress: this.egress,
        logs: logSettings,
        invokesLambda: handlerFunctions.length > 0,
        publishesEvents: transitions.length > 0,
        // Lean sends the AWS APIs through its NAT: an endpoint costs more a month than the NAT
        // instance. Without egress, endpoints are the only way to reach them.
        interfaceEndpoints: !lean || this.egress === "none",
        endpointAzs: lean ? 1 : 2,
      }));
    }
    if (!this.hasInternetEgress) {
      Annotations.of(this).addWarningV2(
        "@hourglass/no-internet-egress",
        "Hourglass has no internet egress: webhooks to public URLs will fail at once with " +
          '"this deployment has no internet egress". Choose egress "nat-instance", "nat-gateway" or ' +
          '"nat-gateway-per-az" (-c egress=...), or give a VPC with private subnets that have egress.',
      );
    }
    const subnets: ec2.SubnetSelection = {
      subnetType: this.hasInternetEgress
        ? ec2.SubnetType.PRIVATE_WITH_EGRESS
        : ec2.SubnetType.PRIVATE_ISOLATED,
    };
    this.admins = resolved.admins;
    // EventBridge bills every entry: no bus, grant or PutEvents unless the deployment names transitions.
    this.eventBus =
      transitions.length === 0
        ? undefined
        : (props.notifications?.eventBus ??
          new events.EventBus(this, "EventBus", { description: "Hourglass: event transitions" }));

    const table = (id: string, definition: TableDefinition) =>
      createTable(this, id, definition, { production, lean }, overrides.tables);
    this.eventsTable = table("Events", EVENTS_TABLE);
    this.leasesTable = table("Leases", LEASES_TABLE);
    this.ledgerTable = table("Ledger", LEDGER_TABLE);
    this.schedulesTable = table("Schedules", SCHEDULES_TABLE);
    this.cache =
      redisChoice.kind === "external"
        ? undefined
        : createCache(
            this,
            this.vpc,
            subnets,
            redisChoice.kind,
            redisChoice.kind === "replication-group"
              ? (redisChoice.nodeType ?? DEFAULTS.cacheNodeType)
              : DEFAULTS.cacheNodeType,
            production,
          );
    this.securityGroups = {
      api: functionSecurityGroup(this, "Api", this.vpc),
      dispatcher: functionSecurityGroup(this, "Dispatcher", this.vpc),
      worker: functionSecurityGroup(this, "Worker", this.vpc),
    };
    for (const group of Object.values(this.securityGroups)) {
      if (this.cache) {
        for (const port of this.cache.ports)
          group.connections.allowTo(
            this.cache.securityGroup,
            ec2.Port.tcp(port),
            "Hourglass function to Valkey",
          );
      } else if (redisChoice.kind === "external") {
        const url = new URL(redisChoice.url);
        group.addEgressRule(
          ec2.Peer.anyIpv4(),
          ec2.Port.tcp(Number(url.port || 6379)),
          "to the external Redis",
        );
      }
    }
    // Webhooks: the worker alone calls out on HTTP as well as HTTPS.
    this.securityGroups.worker.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(80), "webhooks over http");
    if (this.nat) {
      const groups = Object.values(this.securityGroups);
      admitToNat(this.nat, groups, [443]);
      admitToNat(this.nat, [this.securityGroups.worker], [80]);
      if (redisChoice.kind === "external")
        admitToNat(this.nat, groups, [Number(new URL(redisChoice.url).port || 6379)]);
    }

    const queues = createQueues(this, overrides);
    this.queue = queues.queue;
    this.deadLetterQueue = queues.deadLetterQueue;
    // Every tenant's webhook signing secret is derived from this one: losing it breaks every
    // receiver's verification, so production keeps it when the stack goes.
    this.webhookSecret = new secretsmanager.Secret(this, "WebhookSecret", {
      description: "Hourglass: master secret; each tenant's webhook signing secret is derived from it",
      generateSecretString: {
        secretStringTemplate: "{}",
        generateStringKey: "webhookSecret",
        excludePunctuation: true,
        passwordLength: 48,
      },
      removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });

    const redisSecret: secretsmanager.ISecret | undefined =
      this.cache?.authSecret ?? (redisChoice.kind === "external" ? redisChoice.passwordSecret : undefined);
    const redisSecrets = redisSecret ? [redisSecret] : [];
    // Only the API (GET /v1/webhook-secret) and the worker (signing) read the signing secret.
    const secrets = {
      api: [...redisSecrets, this.webhookSecret],
      dispatcher: redisSecrets,
      worker: [...redisSecrets, this.webhookSecret],
    };
    const redis =
      redisChoice.kind === "external" ? redisChoice : { url: this.cache!.url, cluster: this.cache!.cluster };
    const environment: FunctionEnvironment = {
      HOURGLASS_MODE: "aws",
      HOURGLASS_REDIS_URL: redis.url,
      HOURGLASS_REDIS_CLUSTER: String(redis.cluster ?? false),
      HOURGLASS_SHARDS: String(resolved.shards),
      HOURGLASS_EVENTS_TABLE: this.eventsTable.tableName,
      HOURGLASS_LEASES_TABLE: this.leasesTable.tableName,
      HOURGLASS_LEDGER_TABLE: this.ledgerTable.tableName,
      HOURGLASS_SCHEDULES_TABLE: this.schedulesTable.tableName,
      HOURGLASS_QUEUE_URL: this.queue.queueUrl,
      HOURGLASS_LOOKAHEAD_SECONDS: String(resolved.lookAhead.toSeconds()),
      HOURGLASS_INDEX_HORIZON_SECONDS: String(resolved.indexHorizon.toSeconds()),
      HOURGLASS_WEBHOOK_ALLOW_PRIVATE: String(resolved.webhookAllowPrivate),
      HOURGLASS_INTERNET_EGRESS: String(this.hasInternetEgress),
      ...(this.admins.length > 0 && {
        HOURGLASS_ADMIN_PRINCIPALS: this.admins.map((role) => role.roleArn).join(","),
      }),
      POWERTOOLS_METRICS_NAMESPACE: "Hourglass",
      // On AWS transitions go to EventBridge; the Redis stream serves only long-running processes.
      HOURGLASS_NOTIFY_STREAM: "false",
      ...(this.eventBus
        ? {
            HOURGLASS_EVENT_BUS_NAME: this.eventBus.eventBusName,
            HOURGLASS_EVENT_BUS_TRANSITIONS: transitions.join(","),
          }
        : { HOURGLASS_NOTIFICATIONS: "false" }),
      ...(handlerFunctions.length > 0 && {
        HOURGLASS_LAMBDA_TARGETS: Stack.of(this).toJsonString(
          Object.fromEntries(handlerFunctions.map(([type, fn]) => [type, fn.functionArn])),
        ),
      }),
    };
    const functionFor = (id: string, role: FunctionRole) =>
      createFunction(this, id, role, {
        vpc: this.vpc,
        subnets,
        securityGroup: this.securityGroups[role],
        handlersModule: resolved.handlersModule,
        logs: logSettings,
        environment: {
          ...environment,
          ...(secrets[role].length > 0 && {
            HOURGLASS_SECRET_ARNS: secrets[role].map((secret) => secret.secretArn).join(","),
          }),
        },
        overrides: { ...overrides.functions, ...overrides[`${role}Function`] },
        ...(role === "dispatcher" &&
          resolved.dispatcherReservedConcurrency !== "none" && {
            reservedConcurrency: resolved.dispatcherReservedConcurrency,
          }),
      });
    this.apiFunction = functionFor("ApiFunction", "api");
    this.dispatcherFunction = functionFor("DispatcherFunction", "dispatcher");
    configureDispatcherInvocations(this.dispatcherFunction);
    this.workerFunction = functionFor("WorkerFunction", "worker");
    // Per function, exactly what its code calls (see TABLE_ACCESS); test/infra/least-privilege pins it.
    grantTable(
      this.apiFunction,
      this.eventsTable,
      [...TABLE_ACCESS.journal, ...TABLE_ACCESS.health, ...TABLE_ACCESS.batchCreate],
      true,
    );
    grantTable(this.apiFunction, this.leasesTable, TABLE_ACCESS.leases);
    grantTable(this.apiFunction, this.ledgerTable, TABLE_ACCESS.ledger);
    this.queue.grantSendMessages(this.apiFunction);
    grantTable(this.dispatcherFunction, this.eventsTable, TABLE_ACCESS.journal, true);
    grantTable(this.dispatcherFunction, this.leasesTable, TABLE_ACCESS.leases);
    this.queue.grantSendMessages(this.dispatcherFunction);
    grantTable(this.workerFunction, this.eventsTable, TABLE_ACCESS.journal, true);
    // A retry due within the look-ahead, and a callback event due that soon, go out from the worker
    // itself (SendMessageBatch, authorized as SendMessage); without it they wait for the dispatcher.
    // With the queue's SQS-managed encryption this adds no KMS grant; with a key of the user's, it
    // adds the key's encrypt actions, which a send needs.
    this.queue.grantSendMessages(this.workerFunction);
    grantTable(this.workerFunction, this.leasesTable, TABLE_ACCESS.signingState);
    // reservation.expire releases holds in the ledger.
    grantTable(this.workerFunction, this.ledgerTable, TABLE_ACCESS.ledger);
    // The three functions make transitions (API: scheduled, rescheduled, cancelled; dispatcher:
    // dispatched; worker: started and the outcomes); nothing else may put events on the bus.
    for (const fn of [this.apiFunction, this.dispatcherFunction, this.workerFunction])
      this.eventBus?.grantPutEventsTo(fn);
    grantSecrets(this.apiFunction, secrets.api);
    grantSecrets(this.dispatcherFunction, secrets.dispatcher);
    grantSecrets(this.workerFunction, secrets.worker);
    // Schedules are read and written by the API and materialized by the dispatcher (which only finds
    // due ones and moves them on); the worker never touches them.
    grantTable(this.apiFunction, this.schedulesTable, TABLE_ACCESS.schedules, true);
    grantTable(this.dispatcherFunction, this.schedulesTable, TABLE_ACCESS.materialize, true);
    attachWorker(this.workerFunction, this.queue, resolved.workerMaxConcurrency);
    for (const [, fn] of handlerFunctions) fn.grantInvoke(this.workerFunction);

    const dispatch = createDispatchSchedule(this, this.dispatcherFunction, resolved.dispatchTrigger);
    this.schedule = dispatch.schedule;
    this.dispatchRule = dispatch.rule;
    const throttle = resolved.throttle;
    if (lean) {
      const http = createHttpApi(this, this.apiFunction, { throttle, logs: logSettings });
      this.api = undefined;
      this.usagePlan = undefined;
      this.httpApi = http.api;
      this.apiUrl = http.stage.url;
    } else {
      ({ api: this.api, usagePlan: this.usagePlan } = createApi(this, this.apiFunction, {
        apiKeys: resolved.apiKeys,
        throttle,
        keyThrottle: resolved.apiKeyThrottle,
        logs: logSettings,
        cloudWatchRole: resolved.apiGatewayCloudWatchRole,
      }));
      this.httpApi = undefined;
      this.apiUrl = this.api.url;
    }
    const observability = createObservability(
      this,
      {
        dispatcher: this.dispatcherFunction,
        worker: this.workerFunction,
        api: this.apiFunction,
        queue: this.queue,
        deadLetterQueue: this.deadLetterQueue,
        scheduleDeadLetterQueue: dispatch.deadLetterQueue,
      },
      {
        lookAheadSeconds: resolved.lookAhead.toSeconds(),
        visibilityTimeoutSeconds:
          overrides.queue?.visibilityTimeout?.toSeconds() ?? WORK_QUEUE.visibilityTimeoutSeconds,
      },
      resolved.alarmTopic,
    );
    this.alarms = {
      ...observability.alarms,
      ...(this.nat &&
        Object.fromEntries(
          finishNatInstances(this, this.nat, resolved.alarmTopic).map((alarm, i) => [
            i === 0 ? "natInstanceStatus" : `natInstanceStatus${i}`,
            alarm,
          ]),
        )),
    };
    this.dashboard = observability.dashboard;
    for (const admin of this.admins) this.grantOperate(admin);
  }

  /**
   * What `hourglass status|pause|resume --aws` needs, and the API: read and update the dispatcher
   * schedule (and pass its role back, as UpdateSchedule requires), read the queues' depths, the
   * alarms and the overdue metric, and the stack's outputs. Given to every role in `admins`.
   */
  grantOperate(grantee: iam.IGrantable): iam.Grant {
    const grant = (
      actions: string[],
      resourceArns: string[],
      conditions?: Record<string, Record<string, unknown>>,
    ) => iam.Grant.addToPrincipal({ grantee, actions, resourceArns, ...(conditions && { conditions }) });
    let combined = this.grantInvoke(grantee)
      .combine(grant(["sqs:GetQueueAttributes"], [this.queue.queueArn, this.deadLetterQueue.queueArn]))
      .combine(grant(["cloudformation:DescribeStacks"], [Stack.of(this).stackId]))
      // Neither call can be narrowed to resources (GetMetricData takes none; alarms are read by name).
      .combine(grant(["cloudwatch:DescribeAlarms", "cloudwatch:GetMetricData"], ["*"]));
    if (this.schedule) {
      const target = (this.schedule.node.defaultChild as scheduler.CfnSchedule)
        .target as scheduler.CfnSchedule.TargetProperty;
      combined = combined
        .combine(grant(["scheduler:GetSchedule", "scheduler:UpdateSchedule"], [this.schedule.scheduleArn]))
        .combine(
          grant(["iam:PassRole"], [target.roleArn], {
            StringEquals: { "iam:PassedToService": "scheduler.amazonaws.com" },
          }),
        );
    }
    return combined;
  }

  /** Lets a role or user call the API (IAM authorization): `hourglass.grantInvoke(myServiceRole)`. */
  grantInvoke(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ["execute-api:Invoke"],
      resourceArns: [
        this.api
          ? this.api.arnForExecuteApi("*", "/*", this.api.deploymentStage.stageName)
          : this.httpApi!.arnForExecuteApi("*", "/*", "$default"),
      ],
    });
  }
}

/**
 * A function's own security group: no traffic in, and out only HTTPS (the AWS APIs through the
 * VPC endpoints: the DynamoDB gateway endpoint's addresses are a prefix list that only a deploy-time
 * lookup could name) plus what the construct adds for the cache and, for the worker, webhooks.
 */
function functionSecurityGroup(scope: Construct, name: string, vpc: ec2.IVpc): ec2.SecurityGroup {
  const group = new ec2.SecurityGroup(scope, `${name}SecurityGroup`, {
    vpc,
    description: `Hourglass ${name.toLowerCase()} function`,
    allowAllOutbound: false,
  });
  group.addEgressRule(
    ec2.Peer.anyIpv4(),
    ec2.Port.tcp(443),
    "HTTPS: AWS APIs (and webhooks from the worker)",
  );
  return group;
}
