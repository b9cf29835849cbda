import { join } from "node:path";
import { Duration } from "aws-cdk-lib";
import type * as iam from "aws-cdk-lib/aws-iam";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import * as logs from "aws-cdk-lib/aws-logs";
import type * as sns from "aws-cdk-lib/aws-sns";
import type { ConfigVariable } from "../../shared/config.ts";
import type {
  DispatchTrigger,
  Egress,
  HourglassOverrides,
  HourglassProps,
  Profile,
  RedisChoice,
} from "./props.ts";

/**
 * Every default of the construct, in one table: the constructor reads resolved props only, and the
 * props' `@default` tags describe these values. Defaults that depend on other props (the egress,
 * the cache) are derived in `resolveProps`.
 */
export const DEFAULTS = {
  production: true,
  profile: "standard" as Profile,
  dispatchTrigger: "scheduler" as DispatchTrigger,
  shards: 16,
  workerMaxConcurrency: 50,
  dispatcherReservedConcurrency: "none" as number | "none",
  lookAhead: Duration.minutes(2),
  indexHorizon: Duration.hours(1),
  logRetention: logs.RetentionDays.ONE_MONTH,
  throttle: { rateLimit: 1_000, burstLimit: 2_000 },
  apiKeyThrottle: { rateLimit: 100, burstLimit: 200 },
  apiKeys: false,
  webhookAllowPrivate: false,
  cacheNodeType: "cache.t4g.small",
  handlersModule: join(import.meta.dirname, "..", "..", "functions", "handlers.ts"),
} as const;

/**
 * Each function's size. The API answers within API Gateway's 29 s; the dispatcher finishes its tick
 * before the next minute; the worker's 60 s bounds one handler run (the queue's visibility timeout
 * must stay above it).
 */
export const FUNCTION_DEFAULTS = {
  api: { memorySize: 512, timeout: Duration.seconds(29) },
  dispatcher: { memorySize: 512, timeout: Duration.seconds(55) },
  worker: { memorySize: 512, timeout: Duration.seconds(60) },
} as const;

export type FunctionRole = keyof typeof FUNCTION_DEFAULTS;

/** The environment Hourglass gives its functions: only variables `shared/config.ts` reads. */
export type FunctionEnvironment = Partial<Record<ConfigVariable | "POWERTOOLS_METRICS_NAMESPACE", string>>;

/** The props with every default applied: what the constructor builds from. */
export interface ResolvedProps {
  readonly production: boolean;
  readonly profile: Profile;
  readonly lean: boolean;
  readonly dispatchTrigger: DispatchTrigger;
  /** Undefined with your own VPC: its subnets decide. */
  readonly egress: Egress | undefined;
  readonly redis: RedisChoice;
  readonly shards: number;
  readonly workerMaxConcurrency: number;
  readonly dispatcherReservedConcurrency: number | "none";
  readonly lookAhead: Duration;
  readonly indexHorizon: Duration;
  readonly logRetention: logs.RetentionDays;
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
  readonly apiKeyThrottle: { readonly rateLimit: number; readonly burstLimit: number };
  readonly apiKeys: boolean;
  readonly apiGatewayCloudWatchRole: boolean;
  readonly webhookAllowPrivate: boolean;
  readonly handlersModule: string;
  readonly handlerFunctions: Readonly<Record<string, lambda.IFunction>>;
  readonly admins: readonly iam.IRole[];
  readonly alarmTopic: sns.ITopic | undefined;
  readonly overrides: HourglassOverrides;
}

/** Applies `DEFAULTS` to validated props. */
export function resolveProps(props: HourglassProps): ResolvedProps {
  const production = props.production ?? DEFAULTS.production;
  const profile = props.profile ?? DEFAULTS.profile;
  const lean = profile === "lean";
  return {
    production,
    profile,
    lean,
    dispatchTrigger: props.dispatchTrigger ?? DEFAULTS.dispatchTrigger,
    egress: props.vpc
      ? undefined
      : (props.egress ?? (lean ? "nat-instance" : production ? "nat-gateway-per-az" : "nat-gateway")),
    redis: props.redis ?? (lean ? { kind: "serverless" } : { kind: "replication-group" }),
    shards: props.shards ?? DEFAULTS.shards,
    workerMaxConcurrency: props.workerMaxConcurrency ?? DEFAULTS.workerMaxConcurrency,
    dispatcherReservedConcurrency:
      props.dispatcherReservedConcurrency ?? DEFAULTS.dispatcherReservedConcurrency,
    lookAhead: props.lookAhead ?? DEFAULTS.lookAhead,
    indexHorizon: props.indexHorizon ?? DEFAULTS.indexHorizon,
    logRetention: props.logRetention ?? DEFAULTS.logRetention,
    throttle: props.throttle ?? DEFAULTS.throttle,
    apiKeyThrottle: props.apiKeyThrottle ?? DEFAULTS.apiKeyThrottle,
    apiKeys: props.apiKeys ?? DEFAULTS.apiKeys,
    // On by default where there is a REST API: a fresh account has no role, and a deploy without
    // one fails at the stage. The lean profile's HTTP API needs none.
    apiGatewayCloudWatchRole: props.apiGatewayCloudWatchRole ?? !lean,
    webhookAllowPrivate: props.webhookAllowPrivate ?? DEFAULTS.webhookAllowPrivate,
    handlersModule: props.handlersModule ?? DEFAULTS.handlersModule,
    handlerFunctions: props.handlerFunctions ?? {},
    admins: props.admins ?? [],
    alarmTopic: props.alarmTopic,
    overrides: props.overrides ?? {},
  };
}
