import type { Duration } from "aws-cdk-lib";
import type * as ec2 from "aws-cdk-lib/aws-ec2";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as logs from "aws-cdk-lib/aws-logs";
import type * as secretsmanager from "aws-cdk-lib/aws-secretsmanager";
import type * as sns from "aws-cdk-lib/aws-sns";

export interface HourglassProps {
  /**
   * Run in this VPC instead of creating one. It needs private subnets in at least two AZs.
   * @default a new VPC: 2 AZs, private isolated subnets, no NAT, endpoints for DynamoDB, SQS and Secrets Manager
   */
  readonly vpc?: ec2.IVpc;
  /**
   * Give the worker a route to the internet (a public subnet and one NAT gateway), which webhooks
   * to public URLs need. Without it, only targets inside the VPC are reachable.
   * @default false
   */
  readonly internetEgress?: boolean;
  /**
   * Production settings: deletion protection on the tables, RETAIN removal policies, and a
   * Multi-AZ cache replica. Turn off for throwaway environments.
   * @default true
   */
  readonly production?: boolean;
  /**
   * `replication-group`: a Valkey primary and replica with TLS and AUTH. `serverless`: ElastiCache
   * Serverless (Valkey), TLS, cluster protocol; the scripts' hash tags keep them valid there.
   * @default "replication-group"
   */
  readonly cache?: "replication-group" | "serverless";
  /**
   * Use this Redis instead of creating ElastiCache: the LocalStack path (a Redis container), or a
   * Redis you run yourself. The functions still run in the VPC.
   * @default undefined: Hourglass creates its own Valkey
   */
  readonly externalRedis?: {
    readonly url: string;
    readonly cluster?: boolean;
    /**
     * A JSON secret `{ "redisAuthToken": "…" }` with the password (AUTH token), read by the
     * functions at cold start. Required in production, where the URL must be `rediss://` and
     * carry no password: an environment variable is readable by anyone who can read the function.
     */
    readonly passwordSecret?: secretsmanager.ISecret;
  };
  /** @default "cache.t4g.small" (replication group only) */
  readonly cacheNodeType?: string;
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
  /** Require an API key (and a usage plan) on every method, on top of IAM. @default false */
  readonly apiKeys?: boolean;
  /** @default { rateLimit: 1000, burstLimit: 2000 } requests per second */
  readonly throttle?: { readonly rateLimit: number; readonly burstLimit: number };
  /** Upper bound on concurrent worker invocations. @default 50 */
  readonly workerMaxConcurrency?: number;
  /** Dispatcher look-ahead: how far before due events are sent with an SQS delay. @default 2 minutes */
  readonly lookAhead?: Duration;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** Alarms notify this topic. @default no notification (alarms still show in the console) */
  readonly alarmTopic?: sns.ITopic;
  /** Allow webhooks to private addresses (for targets inside the VPC). @default false */
  readonly webhookAllowPrivate?: boolean;
}

/** Every problem with the props at once, before anything is built. */
export class HourglassPropsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid Hourglass props:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
    this.name = "HourglassPropsError";
  }
}

export function validateProps(props: HourglassProps): void {
  const problems: string[] = [];
  if (
    props.shards !== undefined &&
    (!Number.isInteger(props.shards) || props.shards < 1 || props.shards > 1024)
  ) {
    problems.push(`shards must be a whole number from 1 to 1024 (got ${props.shards})`);
  }
  if (
    props.workerMaxConcurrency !== undefined &&
    (props.workerMaxConcurrency < 2 || props.workerMaxConcurrency > 1000)
  ) {
    problems.push(
      `workerMaxConcurrency must be from 2 to 1000, as the SQS event source allows (got ${props.workerMaxConcurrency})`,
    );
  }
  if (
    props.throttle &&
    (props.throttle.rateLimit <= 0 || props.throttle.burstLimit < props.throttle.rateLimit)
  ) {
    problems.push("throttle needs rateLimit > 0 and burstLimit >= rateLimit");
  }
  if (props.lookAhead && (props.lookAhead.toSeconds() < 60 || props.lookAhead.toSeconds() > 900)) {
    problems.push(
      "lookAhead must be from 1 minute (the dispatcher's period) to 15 minutes (SQS's longest delay)",
    );
  }
  if (props.cache === "serverless" && props.cacheNodeType) {
    problems.push("cacheNodeType applies to the replication group only, not to serverless");
  }
  if (props.externalRedis && !/^rediss?:\/\//.test(props.externalRedis.url)) {
    problems.push(`externalRedis.url must be a redis:// or rediss:// URL (got ${props.externalRedis.url})`);
  }
  if (props.externalRedis && (props.production ?? true)) {
    const url = props.externalRedis.url;
    if (!url.startsWith("rediss://"))
      problems.push(`externalRedis.url must be rediss:// (TLS) in production (got ${url.split("@").pop()})`);
    if (/^rediss?:\/\/[^@/]*:[^@/]+@/.test(url))
      problems.push("externalRedis.url must not carry a password in production: give it as passwordSecret");
    else if (!props.externalRedis.passwordSecret)
      problems.push("externalRedis.passwordSecret (a Secrets Manager secret) is required in production");
  }
  if (props.externalRedis && props.cache) {
    problems.push(
      "externalRedis and cache exclude each other: Hourglass either creates a cache or uses yours",
    );
  }
  for (const type of Object.keys(props.handlerFunctions ?? {})) {
    if (!/^[a-z][a-z0-9._-]{0,63}$/.test(type)) {
      problems.push(
        `handlerFunctions key "${type}" is not an event type (lowercase, starts with a letter, at most 64 characters)`,
      );
    }
  }
  if (props.vpc && props.internetEgress) {
    problems.push(
      "internetEgress builds a NAT into the VPC Hourglass creates; with your own vpc, give it egress yourself",
    );
  }
  if (problems.length > 0) throw new HourglassPropsError(problems);
}
