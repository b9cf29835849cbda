import { TRANSITIONS } from "../../shared/notifications/model.ts";
import { DEFAULTS, FUNCTION_DEFAULTS } from "./defaults.ts";
import { EGRESS_CHOICES, type HourglassProps, HourglassPropsError } from "./props.ts";

/** Every problem with the props at once, before anything is built (as Solutions Constructs do). */
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
  const reserved = props.dispatcherReservedConcurrency;
  if (reserved !== undefined && reserved !== "none" && !(Number.isInteger(reserved) && reserved >= 1)) {
    problems.push(
      `dispatcherReservedConcurrency must be a whole number of at least 1, or "none" (got ${String(reserved)}); 0 would stop the dispatcher for good`,
    );
  }
  const overriddenReservation =
    props.overrides?.dispatcherFunction?.reservedConcurrentExecutions ??
    props.overrides?.functions?.reservedConcurrentExecutions;
  if (reserved !== undefined && overriddenReservation !== undefined) {
    problems.push(
      "dispatcherReservedConcurrency and overrides' reservedConcurrentExecutions both reserve the dispatcher's concurrency: give one",
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
  const minimumHorizon = (props.lookAhead ?? DEFAULTS.lookAhead).toSeconds() + 180;
  if (props.indexHorizon && props.indexHorizon.toSeconds() < minimumHorizon) {
    problems.push(
      `indexHorizon must be at least the look-ahead plus three dispatcher periods (${minimumHorizon} seconds)`,
    );
  }
  const redis = props.redis;
  if (redis && !["replication-group", "serverless", "external"].includes(redis.kind)) {
    problems.push(`redis.kind must be replication-group, serverless or external (got ${String(redis.kind)})`);
  }
  if (redis?.kind === "external") {
    const url = redis.url;
    if (!/^rediss?:\/\//.test(url)) {
      problems.push(`redis.url must be a redis:// or rediss:// URL (got ${url})`);
    } else if (props.production ?? true) {
      if (!url.startsWith("rediss://"))
        problems.push(`redis.url must be rediss:// (TLS) in production (got ${url.split("@").pop()})`);
      if (/^rediss?:\/\/[^@/]*:[^@/]+@/.test(url))
        problems.push("redis.url must not carry a password in production: give it as passwordSecret");
      else if (!redis.passwordSecret)
        problems.push("redis.passwordSecret (a Secrets Manager secret) is required in production");
    }
  }
  const overrides = props.overrides;
  const visibility = overrides?.queue?.visibilityTimeout?.toSeconds();
  const workerTimeout = (
    overrides?.workerFunction?.timeout ??
    overrides?.functions?.timeout ??
    FUNCTION_DEFAULTS.worker.timeout
  ).toSeconds();
  if (visibility !== undefined && visibility < workerTimeout) {
    problems.push(
      `overrides.queue.visibilityTimeout (${visibility} s) must be at least the worker's timeout (${workerTimeout} s), or SQS hands a message to a second worker while the first still runs it`,
    );
  }
  for (const type of Object.keys(props.handlerFunctions ?? {})) {
    if (!/^[a-z][a-z0-9._-]{0,63}$/.test(type)) {
      problems.push(
        `handlerFunctions key "${type}" is not an event type (lowercase, starts with a letter, at most 64 characters)`,
      );
    }
  }
  if (props.egress !== undefined && !EGRESS_CHOICES.includes(props.egress)) {
    problems.push(`egress must be one of ${EGRESS_CHOICES.join(", ")} (got ${String(props.egress)})`);
  }
  if (props.vpc && props.egress !== undefined) {
    problems.push(
      "egress builds NAT gateways or a NAT instance into the VPC Hourglass creates; with your own vpc, its private subnets with egress (or their absence) decide",
    );
  }
  if (props.profile !== undefined && !["standard", "lean"].includes(props.profile)) {
    problems.push(`profile must be standard or lean (got ${String(props.profile)})`);
  }
  if (props.dispatchTrigger !== undefined && !["scheduler", "events-rule"].includes(props.dispatchTrigger)) {
    problems.push(`dispatchTrigger must be scheduler or events-rule (got ${String(props.dispatchTrigger)})`);
  }
  if (props.profile === "lean" && redis?.kind === "replication-group") {
    problems.push(
      "profile lean uses ElastiCache Serverless; leave redis unset or choose serverless or external",
    );
  }
  if (props.profile === "lean" && props.apiKeys) {
    problems.push("apiKeys need the REST API; profile lean uses an HTTP API, which has no API keys");
  }
  if (props.apiKeyThrottle && !props.apiKeys)
    problems.push("apiKeyThrottle applies to API keys: set apiKeys too");
  const stage = props.throttle ?? DEFAULTS.throttle;
  if (
    props.apiKeyThrottle &&
    (props.apiKeyThrottle.rateLimit > stage.rateLimit || props.apiKeyThrottle.burstLimit > stage.burstLimit)
  )
    problems.push("apiKeyThrottle must be at most throttle: a key allowed the whole stage protects no one");
  if (props.profile === "lean" && props.apiGatewayCloudWatchRole) {
    problems.push(
      "apiGatewayCloudWatchRole is for the REST API's logs; profile lean uses an HTTP API, which needs no account role",
    );
  }
  const transitions = props.notifications?.transitions ?? [];
  const unknown = transitions.filter((t) => !(TRANSITIONS as readonly string[]).includes(t));
  if (unknown.length > 0)
    problems.push(
      `notifications.transitions: unknown ${unknown.join(", ")} (known: ${TRANSITIONS.join(", ")})`,
    );
  if (props.notifications?.eventBus && transitions.length === 0)
    problems.push(
      "notifications.eventBus is given but notifications.transitions names none: nothing would be published on it",
    );
  if (problems.length > 0) throw new HourglassPropsError(problems);
}
