import type { Duration } from "aws-cdk-lib";
import type * as dynamodb from "aws-cdk-lib/aws-dynamodb";
import type * as ec2 from "aws-cdk-lib/aws-ec2";
import type * as events from "aws-cdk-lib/aws-events";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";
import type * as logs from "aws-cdk-lib/aws-logs";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { Transition } from "../../shared/notifications/model.ts";

/**
 * How the functions reach the internet, which webhooks to public URLs need:
 * - `nat-gateway-per-az`: a NAT gateway in each of the two AZs, so losing one AZ loses nothing;
 * - `nat-gateway`: one NAT gateway (about half the cost; while its AZ is down, webhooks from the
 *   other AZ fail and are retried);
 * - `nat-instance`: one t4g.nano NAT instance (Amazon Linux 2023, arm64) instead of a gateway,
 *   about a fifth of one gateway's fixed cost; while it is down or being replaced, webhooks and
 *   the functions' AWS calls through it fail and are retried (docs/deploy.md);
 * - `none`: isolated subnets only. Webhooks reach targets inside the VPC (with
 *   `webhookAllowPrivate`), and any other webhook fails at once with "this deployment has no
 *   internet egress". `cdk synth` warns.
 */
export type Egress = "nat-gateway-per-az" | "nat-gateway" | "nat-instance" | "none";

/** Every `Egress`, for validation and the `-c egress=` flag. */
export const EGRESS_CHOICES: readonly Egress[] = [
  "nat-gateway-per-az",
  "nat-gateway",
  "nat-instance",
  "none",
];

/**
 * - `standard`: a Valkey replication group (primary and Multi-AZ replica in production), NAT
 *   gateways, interface endpoints in both AZs, the REST API (API keys and usage plans available).
 * - `lean`: for small volumes, where the fixed cost is most of the bill: ElastiCache Serverless
 *   (Valkey, billed by data stored and ECPUs), a NAT instance, no interface endpoints (the AWS APIs
 *   through the NAT; DynamoDB through its free gateway endpoint), tables encrypted with
 *   DynamoDB's own key (no KMS requests), and an HTTP API with IAM authorization ($1.00 instead of
 *   $3.50 per million requests; no API keys or usage plans).
 */
export type Profile = "standard" | "lean";

/**
 * What invokes the dispatcher every minute: EventBridge Scheduler (`scheduler`, on AWS), or an
 * EventBridge rule with a rate (`events-rule`), which LocalStack executes; LocalStack's
 * Scheduler stores schedules but never runs them.
 */
export type DispatchTrigger = "scheduler" | "events-rule";

/**
 * Where the time index lives: a cache Hourglass creates, or a Redis you run.
 * - `replication-group`: a Valkey primary and replica with TLS and AUTH.
 * - `serverless`: ElastiCache Serverless (Valkey), TLS, cluster protocol; the scripts' hash tags
 *   keep them valid there.
 * - `external`: this Redis instead of ElastiCache: the LocalStack path (a Redis container), or a
 *   Redis you run yourself. The functions still run in the VPC.
 */
export type RedisChoice =
  | {
      readonly kind: "replication-group";
      /** @default "cache.t4g.small" */
      readonly nodeType?: string;
    }
  | { readonly kind: "serverless" }
  | {
      readonly kind: "external";
      readonly url: string;
      /** @default false */
      readonly cluster?: boolean;
      /**
       * A JSON secret `{ "redisAuthToken": "…" }` with the password (AUTH token), read by the
       * functions at cold start. Required in production, where the URL must be `rediss://` and
       * carry no password: an environment variable is readable by anyone who can read the function.
       */
      readonly passwordSecret?: secretsmanager.ISecret;
    };

/** Props that cannot be overridden: what makes the resource the one Hourglass's code expects. */
type FixedFunctionProps = "entry" | "handler" | "bundling" | "vpc" | "vpcSubnets" | "securityGroups";

/**
 * Props merged over what Hourglass sets, as Solutions Constructs' `*PropsOverride` are: for a
 * customer-managed key, other billing, more memory, a newer runtime. What the code depends on
 * (keys and indexes, the bundle, the VPC placement, the redrive wiring) is not overridable.
 */
export interface HourglassOverrides {
  /** Every table (events, leases, ledger, schedules). */
  readonly tables?: Partial<
    Omit<dynamodb.TablePropsV2, "partitionKey" | "sortKey" | "globalSecondaryIndexes" | "timeToLiveAttribute">
  >;
  /** The work queue. Its visibility timeout must stay at least the worker's timeout. */
  readonly queue?: Partial<Omit<sqs.QueueProps, "deadLetterQueue">>;
  readonly deadLetterQueue?: Partial<sqs.QueueProps>;
  /** All three functions; `environment` is added to Hourglass's own variables. */
  readonly functions?: Partial<Omit<nodejs.NodejsFunctionProps, FixedFunctionProps>>;
  readonly apiFunction?: Partial<Omit<nodejs.NodejsFunctionProps, FixedFunctionProps>>;
  readonly dispatcherFunction?: Partial<Omit<nodejs.NodejsFunctionProps, FixedFunctionProps>>;
  readonly workerFunction?: Partial<Omit<nodejs.NodejsFunctionProps, FixedFunctionProps>>;
}

export interface HourglassProps {
  /**
   * Run in this VPC instead of creating one. It needs private subnets in at least two AZs. Its
   * private subnets with egress are used when it has them (the deployment then has internet
   * egress); otherwise its isolated subnets, and the deployment has none.
   * @default a new VPC over 2 AZs with the `egress` chosen, a gateway endpoint for DynamoDB and (standard profile, or without egress) interface endpoints for SQS and Secrets Manager
   */
  readonly vpc?: ec2.IVpc;
  /**
   * How the functions reach the internet (see `Egress`). Only for the VPC Hourglass creates.
   * @default "nat-gateway-per-az" when `production` with the standard profile; "nat-instance" with the lean profile; "nat-gateway" otherwise
   */
  readonly egress?: Egress;
  /** @default "standard" */
  readonly profile?: Profile;
  /** @default "scheduler" */
  readonly dispatchTrigger?: DispatchTrigger;
  /**
   * Roles allowed to call the admin routes (`/v1/admin/*`, which act on every tenant) and granted
   * what `hourglass status|pause|resume --aws` needs (`grantOperate`). No one else may call them.
   * @default none: the admin routes answer 403 to every caller
   */
  readonly admins?: readonly iam.IRole[];
  /**
   * Production settings: deletion protection on the tables, RETAIN removal policies, and a
   * Multi-AZ cache replica. Turn off for throwaway environments.
   * @default true
   */
  readonly production?: boolean;
  /**
   * Where the time index lives (see `RedisChoice`).
   * @default `{ kind: "replication-group" }`; `{ kind: "serverless" }` with profile lean
   */
  readonly redis?: RedisChoice;
  /** Index shards (Redis hash tags). Fixed for the life of the deployment. @default 16 */
  readonly shards?: number;
  /**
   * A module exporting `handlers: HandlerDefinition[]`, bundled into the API (to validate
   * payloads) and the worker (to run them). The built-in `webhook` type is always there.
   * @default the repository's functions/handlers.ts
   */
  readonly handlersModule?: string;
  /**
   * Event types handled by Lambda functions of yours: type → function. The worker invokes the
   * function with `{ id, tenant, attempt, runAt, payload }`; returning is success, throwing a retry
   * (an error of type `NonRetryableError` goes straight to the dead letters).
   * @default none
   */
  readonly handlerFunctions?: Readonly<Record<string, lambda.IFunction>>;
  /** Require an API key (and a usage plan) on every method, on top of IAM (standard profile only). @default false */
  readonly apiKeys?: boolean;
  /**
   * Let this stack set API Gateway's account-wide CloudWatch role (`AWS::ApiGateway::Account`),
   * through which every REST API of the account and region writes its access and execution logs.
   * There is one per account and region: a stack that sets it points it at its own role (with the
   * same AWS-managed policy as any other). The role and the setting are kept when the stack is
   * deleted, so no other API's logs stop with it. Turn it off when the account's setting is owned
   * elsewhere (`aws apigateway get-account --query cloudwatchRoleArn`). The lean profile's HTTP
   * API needs no such role.
   * @default true for the standard profile (a fresh account has no role, and a REST stage with
   * logging fails to deploy without one); false for lean
   */
  readonly apiGatewayCloudWatchRole?: boolean;
  /**
   * The stage's limit, shared by every caller: one tenant alone can use all of it unless each
   * tenant calls with an API key of its own (`apiKeys`, `apiKeyThrottle`).
   * @default { rateLimit: 1000, burstLimit: 2000 } requests per second
   */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
  /**
   * With `apiKeys`, each API key's own limit (the usage plan's, applied per key): at most the
   * stage's, so one tenant with its own key cannot take all of the stage's (docs/deploy.md).
   * @default { rateLimit: 100, burstLimit: 200 } requests per second
   */
  readonly apiKeyThrottle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** Upper bound on concurrent worker invocations. @default 50 */
  readonly workerMaxConcurrency?: number;
  /**
   * Concurrency reserved for the dispatcher, so the API, the worker and the account's other
   * functions can never take the last execution its minute's tick needs; `1` is enough (one tick a
   * minute, 55 s at most, under a Redis lease). Lambda refuses a reservation that leaves fewer than
   * 100 executions unreserved ("You can reserve concurrency for as many functions as you like, as
   * long as you leave at least 100 simultaneous executions unreserved", PutFunctionConcurrency), so
   * an account whose concurrency quota is 100 or less, as new accounts' is, cannot reserve any and
   * `cdk deploy` would fail there: hence no reservation by default. Give `1` once the account's
   * quota is above 100 (docs/deploy.md).
   * @default "none"
   */
  readonly dispatcherReservedConcurrency?: number | "none";
  /** Dispatcher look-ahead: how far before due events are sent with an SQS delay. @default 2 minutes */
  readonly lookAhead?: Duration;
  /**
   * The near horizon: only events due within it are kept in Redis; later ones stay in DynamoDB
   * until the dispatcher promotes them (docs/horizon.md). At least the look-ahead plus three
   * dispatcher periods (minutes). @default 1 hour
   */
  readonly indexHorizon?: Duration;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** Alarms notify this topic. @default no notification (alarms still show in the console) */
  readonly alarmTopic?: sns.ITopic;
  /** Allow webhooks to private addresses (for targets inside the VPC). @default false */
  readonly webhookAllowPrivate?: boolean;
  /**
   * The transitions put on an EventBridge bus, `source` "hourglass" and a `detail-type` per
   * transition ("Event Dead"), for your rules to route (docs/notifications.md). EventBridge bills
   * every entry ($1.00 per million), and a job that succeeds makes four transitions, so none is
   * published unless named here.
   * @default none: no bus, no PutEvents, nothing to pay
   */
  readonly notifications?: {
    /** The transitions to publish, e.g. `["dead"]`; `[...TRANSITIONS]` for every one. @default [] */
    readonly transitions?: readonly Transition[];
    /**
     * Publish to this bus instead of creating one (the default bus, a bus of another stack).
     * @default a new bus, `hourglass.eventBus`, when `transitions` names any
     */
    readonly eventBus?: events.IEventBus;
  };
  /** Props merged over Hourglass's own for its tables, queues and functions. @default none */
  readonly overrides?: HourglassOverrides;
}

/** Every problem with the props at once, before anything is built. */
export class HourglassPropsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid Hourglass props:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "HourglassPropsError";
  }
}
