import { availableParallelism } from "node:os";
import { z } from "zod";
import { LocalWebhookSecretError, localWebhookSecret } from "./webhook-secret.ts";

/**
 * Every setting Hourglass reads from the environment, validated in one place.
 *
 * Endpoints for DynamoDB and SQS are deliberately absent: the AWS SDK reads
 * `AWS_ENDPOINT_URL`, `AWS_ENDPOINT_URL_DYNAMODB` and `AWS_ENDPOINT_URL_SQS` itself, so the same
 * build talks to AWS, LocalStack or the embedded stand-ins without a code change.
 */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly reason: string,
  ) {
    super(`${variable}: ${reason}`);
    this.name = "ConfigError";
  }
}

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
/** One message for every way a number can be wrong, so the one-line error says what is expected. */
const int = (min: number, max: number) => {
  const error = `a whole number from ${min} to ${max}`;
  // Digits only: Number() would read " " as 0 and take "1e1" or "0x2", which no one means.
  return z
    .union([z.number(), z.string().regex(/^-?\d+$/, { error })], { error })
    .transform(Number)
    .pipe(z.number({ error }).int({ error }).min(min, { error }).max(max, { error }));
};
const port = int(0, 65_535);
const url = (protocols: readonly string[]) =>
  z
    .string()
    .url({ error: `a URL (${protocols.join(", ")})` })
    // Refinements run even when .url() failed: parse safely, the .url() issue is the one reported.
    .refine(
      (value) => !URL.canParse(value) || protocols.includes(new URL(value).protocol.replace(/:$/, "")),
      {
        error: `a URL starting with ${protocols.map((p) => `${p}://`).join(" or ")}`,
      },
    );

export type Mode = "local" | "aws";

/** Defaults that differ between a laptop and AWS: a laptop ticks every second, AWS every minute. */
/**
 * The dispatch lease is how long a sent event may wait for its worker before it is sent again:
 * it must outlast the look-ahead (the longest SQS delay the dispatcher uses) with room to spare,
 * and it is also how late an event can be when the queue loses its message.
 */
/** Events per shard and window handed out and not finished before claims wait (see HOURGLASS_SHARD_IN_FLIGHT). */
const PACING_DEFAULT = 1_000;

const modeDefaults: Record<
  Mode,
  {
    tickMs: number;
    lookAheadSeconds: number;
    allowPrivate: boolean;
    dispatchLeaseSeconds: number;
    deliverAheadMs: number;
    eventsPerMessage: number;
  }
> = {
  // Locally a message is visible a few seconds before it is due and the worker holds it until
  // then, so a burst is received before its second comes, not after (docs/benchmarks.md). On AWS
  // the worker Lambda would be billed for that wait: messages become visible when due.
  local: {
    tickMs: 1_000,
    lookAheadSeconds: 5,
    allowPrivate: true,
    dispatchLeaseSeconds: 30,
    deliverAheadMs: 4_000,
    // One local process receives thousands of messages a second in a burst: each costs it the
    // SDK's parsing, a slot and a delete, so events due in the same second share one. Four, not
    // ten: ten made the worker processes' shares of a burst uneven (a receive of 10 messages was
    // 100 events), and the webhook row's p99 went from 0.86-0.91x BullMQ's to 1.38-1.56x
    // (docs/benchmarks.md, "Events that share a message").
    eventsPerMessage: 4,
  },
  aws: {
    tickMs: 60_000,
    lookAheadSeconds: 120,
    allowPrivate: false,
    dispatchLeaseSeconds: 300,
    deliverAheadMs: 0,
    // A Lambda batch of 10 messages would run ten times as many handlers at once as its memory
    // and timeout were sized for; a deployment raises it knowingly (docs/deploy.md).
    eventsPerMessage: 1,
  },
};

/**
 * Webhook requests one worker process has in flight at once to one origin, per tenant: enough to
 * keep a receiver busy, few enough that a burst goes through in turn instead of all at once.
 */
export const DEFAULT_WEBHOOK_REQUESTS_PER_ORIGIN = 64;

const schema = z.object({
  HOURGLASS_MODE: z.enum(["local", "aws"]).optional(),
  HOURGLASS_REDIS_URL: url(["redis", "rediss"]).default("redis://127.0.0.1:6379"),
  // Read by the AWS SDK itself; validated here so a typo fails before anything starts.
  AWS_ENDPOINT_URL: url(["http", "https"]).optional(),
  AWS_ENDPOINT_URL_DYNAMODB: url(["http", "https"]).optional(),
  AWS_ENDPOINT_URL_SQS: url(["http", "https"]).optional(),
  // The embedded stack of `npm start`: where its stand-ins listen and keep their data.
  HOURGLASS_DATA_DIR: z.string().min(1).default(".hourglass"),
  HOURGLASS_DYNAMODB_PORT: port.default(8000),
  HOURGLASS_SQS_PORT: port.default(4566),
  // Worker processes of `npm start`, each long-polling the work queue (0: the worker runs in the
  // API's process). Unset: one per CPU.
  HOURGLASS_LOCAL_WORKERS: int(0, 64).optional(),
  // How long the local worker lets an outcome write wait while its queue has a backlog, so the
  // messages behind start first (shared/local/outcome-gate.ts). 0 writes every outcome at once.
  HOURGLASS_LOCAL_OUTCOME_TRAIL_MS: int(0, 20_000).default(5_000),
  HOURGLASS_REDIS_CLUSTER: bool.default(false),
  HOURGLASS_KEY_PREFIX: z
    .string()
    .regex(/^[a-z0-9_-]{1,16}$/, "lowercase letters, digits, _ or -, at most 16")
    .default("hg"),
  HOURGLASS_SHARDS: int(1, 1024).default(16),
  HOURGLASS_SHARD_GROUPS: int(1, 1024).default(4),
  HOURGLASS_EVENTS_TABLE: z.string().min(3).default("hourglass-events"),
  HOURGLASS_LEASES_TABLE: z.string().min(3).default("hourglass-leases"),
  HOURGLASS_LEDGER_TABLE: z.string().min(3).default("hourglass-ledger"),
  HOURGLASS_SCHEDULES_TABLE: z.string().min(3).default("hourglass-schedules"),
  HOURGLASS_SCHEDULE_MIN_INTERVAL_SECONDS: int(1, 86_400).default(1),
  HOURGLASS_SCHEDULES_PER_TENANT: int(1, 1_000_000).default(1_000),
  HOURGLASS_SCHEDULE_MISSED_AFTER_SECONDS: int(1, 86_400).optional(),
  HOURGLASS_LEDGER_SNAPSHOT_EVERY: int(2, 100_000).default(500),
  HOURGLASS_QUEUE_URL: z.string().url().optional(),
  HOURGLASS_QUEUE_NAME: z.string().min(1).default("hourglass-work"),
  HOURGLASS_TICK_MS: int(50, 300_000).optional(),
  HOURGLASS_LOOKAHEAD_SECONDS: int(0, 900).optional(),
  HOURGLASS_DELIVER_AHEAD_MS: int(0, 60_000).optional(),
  HOURGLASS_EVENTS_PER_MESSAGE: int(1, 100).optional(),
  HOURGLASS_INDEX_HORIZON_SECONDS: int(1, 315_360_000).default(3_600),
  HOURGLASS_CLAIM_BATCH: int(1, 5_000).default(500),
  // Pacing (docs/flow-control.md, "Fairness between tenants"): events of one shard handed out and
  // not finished at once, in each of two windows (due now; claimed ahead). 0 turns pacing off.
  HOURGLASS_SHARD_IN_FLIGHT: int(0, 1_000_000).default(PACING_DEFAULT),
  // Per-tenant caps (docs/flow-control.md); 0 turns one off. A tenant cannot raise them.
  HOURGLASS_TENANT_CREATES_PER_SECOND: int(0, 1_000_000).default(10_000),
  HOURGLASS_TENANT_CREATES_BURST: int(500, 10_000_000).optional(),
  // Off by default: with the in-process transport a burst of 20k events would otherwise wait
  // for slots a tick at a time (see docs/flow-control.md).
  HOURGLASS_TENANT_MAX_RUNNING: int(0, 1_000_000).default(0),
  // Types one tenant may set limits on: each is an entry in that tenant's index item (400 KB at most).
  HOURGLASS_TENANT_LIMITED_TYPES: int(1, 5_000).default(1_000),
  HOURGLASS_DISPATCH_LEASE_SECONDS: int(1, 43_200).optional(),
  HOURGLASS_RUN_LEASE_MARGIN_MS: int(0, 600_000).default(30_000),
  HOURGLASS_HANDLER_TIMEOUT_SECONDS: int(1, 900).default(30),
  HOURGLASS_MAX_ATTEMPTS: int(1, 100).default(5),
  HOURGLASS_BACKOFF_BASE_MS: int(10, 3_600_000).default(1_000),
  HOURGLASS_BACKOFF_MAX_MS: int(100, 86_400_000).default(3_600_000),
  HOURGLASS_RETENTION_DAYS: int(1, 3_650).default(30),
  HOURGLASS_HORIZON_DAYS: int(1, 3_650).default(366),
  HOURGLASS_RECOVERY_GRACE_SECONDS: int(1, 86_400).default(120),
  HOURGLASS_RECOVERY_EVERY_SECONDS: int(1, 86_400).default(60),
  HOURGLASS_RECOVERY_REVERIFY_SECONDS: int(60, 7 * 86_400).default(3_600),
  HOURGLASS_JOURNAL: bool.default(true),
  HOURGLASS_WEBHOOK_ALLOW_PRIVATE: bool.optional(),
  HOURGLASS_WEBHOOK_SECRET: z.string().min(16).optional(),
  // Set by the CDK construct: "false" when the deployment has no route to the internet. Read by
  // the webhook handler (shared/handlers/egress.ts), which must see it even without a config.
  HOURGLASS_INTERNET_EGRESS: bool.optional(),
  HOURGLASS_SECRET_ARNS: z
    .string()
    .regex(/^arn:[^,]+(,arn:[^,]+)*$/, "secret ARNs separated by commas")
    .optional(),
  HOURGLASS_WEBHOOK_TIMEOUT_MS: int(100, 900_000).default(10_000),
  HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN: int(1, 10_000).default(DEFAULT_WEBHOOK_REQUESTS_PER_ORIGIN),
  HOURGLASS_LAMBDA_TARGETS: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({
          code: "custom",
          message: "a JSON object of event type → Lambda function name or ARN",
        });
        return z.NEVER;
      }
    })
    .pipe(
      z.record(
        z.string().regex(/^[a-z][a-z0-9._-]{0,63}$/, "keys are event types"),
        z
          .string()
          .regex(
            /^(arn:[^:]+:lambda:[^:]+:\d{12}:function:)?[A-Za-z0-9_-]{1,140}(:[A-Za-z0-9$_-]+)?$/,
            "values are function names or ARNs",
          ),
      ),
    )
    .optional(),
  HOURGLASS_API_TOKENS: z
    .string()
    .regex(
      /^[A-Za-z0-9_-]{1,64}:[^,:\s]{16,}(,[A-Za-z0-9_-]{1,64}:[^,:\s]{16,})*$/,
      "tenant:token pairs separated by commas; tokens of 16 characters or more",
    )
    .optional(),
  HOURGLASS_ADMIN_TOKENS: z
    .string()
    .regex(/^[^,:\s]{16,}(,[^,:\s]{16,})*$/, "bearer tokens of 16 characters or more, separated by commas")
    .optional(),
  HOURGLASS_ADMIN_PRINCIPALS: z
    .string()
    .regex(/^arn:[^,]+(,arn:[^,]+)*$/, "IAM role or user ARNs separated by commas")
    .optional(),
  HOURGLASS_ALLOW_FEDERATED_USERS: bool.default(false),
  HOURGLASS_ALLOWED_HOSTS: z
    .string()
    .regex(/^[A-Za-z0-9.-]+(,[A-Za-z0-9.-]+)*$/, "host names separated by commas")
    .optional(),
  HOURGLASS_MAX_BODY_BYTES: int(1_024, 10_485_760).default(1_048_576),
  // Notifications of every transition (shared/notifications).
  HOURGLASS_NOTIFICATIONS: bool.default(true),
  HOURGLASS_NOTIFY_STREAM: bool.default(true),
  HOURGLASS_NOTIFY_STREAM_MAXLEN: int(100, 10_000_000).default(10_000),
  // Unset: every 50 ms in a long-running process; on Lambda only when the invocation ends (see
  // notifications.flushMs), so one PutEvents carries up to 10 of an invocation's transitions.
  HOURGLASS_NOTIFY_FLUSH_MS: int(1, 10_000).optional(),
  HOURGLASS_NOTIFY_BUFFER: int(100, 1_000_000).default(100_000),
  HOURGLASS_STREAM_CLIENTS_PER_TENANT: int(1, 10_000).default(10),
  HOURGLASS_EVENT_BUS_NAME: z
    .string()
    .regex(/^(arn:[^\s]+|[A-Za-z0-9._/-]{1,256})$/, "an EventBridge bus name or ARN")
    .optional(),
  // The transitions put on the bus: EventBridge bills every entry, so only those asked for.
  HOURGLASS_EVENT_BUS_TRANSITIONS: z
    .string()
    .regex(/^[a-z]+(,[a-z]+)*$/, "transition names separated by commas (dead,retrying)")
    .optional(),
  HOURGLASS_EVENT_BUS_SOURCE: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,256}$/, "letters, digits, . _ or -")
    .refine((v) => !v.startsWith("aws."), "must not start with aws.")
    .default("hourglass"),
  LOG_LEVEL: z.enum(["DEBUG", "INFO", "WARN", "ERROR", "SILENT"]).default("INFO"),
  PORT: port.default(3000),
});

/** The name of every environment variable Hourglass reads: the CDK construct sets only these. */
export type ConfigVariable = keyof z.input<typeof schema>;

export interface HourglassConfig {
  readonly mode: Mode;
  readonly redis: { readonly url: string; readonly cluster: boolean };
  readonly keyPrefix: string;
  readonly shards: number;
  /** Dispatchers lease shards in this many groups, so several can share the work. */
  readonly shardGroups: number;
  readonly tables: {
    readonly events: string;
    readonly leases: string;
    readonly ledger: string;
    readonly schedules: string;
  };
  readonly schedules: {
    /** The shortest gap allowed between two occurrences of one schedule. */
    readonly minIntervalMs: number;
    readonly perTenant: number;
    /**
     * An occurrence found this late (after downtime) counts as missed, and the schedule's
     * catchUp decides whether it runs. Later by less, it simply runs late.
     */
    readonly missedAfterMs: number;
  };
  /** A snapshot summarises a SKU's ledger once this many entries follow the last one. */
  readonly ledgerSnapshotEvery: number;
  readonly queue: { readonly url: string | undefined; readonly name: string };
  readonly tickMs: number;
  readonly lookAheadMs: number;
  /**
   * How long before its due time a message becomes visible in the work queue (within the whole
   * second below); the worker holds it until it is due. At most the look-ahead.
   */
  readonly deliverAheadMs: number;
  /**
   * Events due in the same second that may share one work-queue message. The worker runs each on
   * its own; a message goes back to the queue only if one of its events could not be recorded, and
   * its redelivery runs only the events still unfinished (the others are dropped as stale).
   */
  readonly eventsPerMessage: number;
  /**
   * Only events due within this much of now live in the Redis index; later ones live only in the
   * journal until the dispatcher's loader promotes them (docs/horizon.md). Ignored without a journal.
   */
  readonly indexHorizonMs: number;
  readonly claimBatch: number;
  /** Pacing budget per shard and window (claim.lua); 0: none. */
  readonly shardInFlight: number;
  /** Deployment-wide per-tenant caps (flow control); 0 means off. */
  readonly tenantLimits: {
    readonly createsPerSecond: number;
    /** Creates a tenant may make at once; at least 500, so one batch always fits. */
    readonly createsBurst: number;
    readonly maxRunning: number;
    /** Event types a tenant may set limits on (`PUT /v1/types/{type}/limits`). */
    readonly limitedTypes: number;
  };
  readonly dispatchLeaseMs: number;
  readonly handlerTimeoutMs: number;
  /** Added to the handler's timeout for the lease of a running event (time for the ack itself). */
  readonly runLeaseMarginMs: number;
  readonly retry: { readonly maxAttempts: number; readonly baseMs: number; readonly maxMs: number };
  readonly retentionSeconds: number;
  readonly horizonMs: number;
  readonly recovery: {
    readonly graceMs: number;
    readonly everyMs: number;
    /**
     * How long the sweep trusts what it verified (the held backlog it need not read again) before
     * it reads everything once more: a net under every cause of a lost entry nobody foresaw.
     */
    readonly reverifyMs: number;
  };
  readonly journal: boolean;
  readonly webhook: {
    readonly allowPrivate: boolean;
    /** Loopback targets: only locally, and only with private targets allowed (never on AWS). */
    readonly allowLoopback: boolean;
    /** Ports no webhook may call: the embedded stack's own services and the API (local mode). */
    readonly refusedPorts: ReadonlySet<number>;
    /** The deployment's master secret, from which each tenant's signing secret is derived. */
    readonly secret: string | undefined;
    readonly timeoutMs: number;
    /** Requests in flight at once from one worker process, per tenant and origin. */
    readonly requestsPerOrigin: number;
  };
  /** Event types handled by a Lambda function of the user's: type → function name or ARN. */
  readonly lambdaTargets: Readonly<Record<string, string>>;
  /** Bearer token → tenant. Empty: no tokens required (one default tenant, or IAM on AWS). */
  readonly apiTokens: ReadonlyMap<string, string>;
  /** Bearer tokens of the admin routes (`/v1/admin/*`), which act on every tenant. */
  readonly adminTokens: readonly string[];
  /** On AWS: the IAM roles or users allowed on the admin routes (set by the CDK construct). */
  readonly adminPrincipals: readonly string[];
  /**
   * On AWS, accept `federated-user/…` callers (GetFederationToken sessions). Off by default: the
   * session name is chosen by whoever holds the calling user's keys, so it proves less than a role.
   */
  readonly allowFederatedUsers: boolean;
  /** Host names the local API answers besides loopback ones (DNS-rebinding guard). */
  readonly allowedHosts: readonly string[];
  readonly maxBodyBytes: number;
  /** Secrets Manager secrets holding the Redis AUTH token and the webhook secret (AWS). */
  readonly secretArns: readonly string[];
  readonly logLevel: "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";
  readonly port: number;
  /** Every transition is published (shared/notifications). */
  readonly notifications: {
    readonly enabled: boolean;
    /** Append to each tenant's capped Redis stream (`GET /v1/events/stream`). */
    readonly stream: boolean;
    /** Entries kept per tenant stream (approximately: MAXLEN ~): the resumable window. */
    readonly streamMaxLen: number;
    /**
     * How long a notice may wait for its batch; undefined on Lambda, where the function delivers
     * what its invocation published when it returns (one PutEvents per 10 transitions).
     */
    readonly flushMs: number | undefined;
    /** Notices waiting for delivery at most; beyond it the oldest are dropped and counted. */
    readonly maxBuffered: number;
    /** Open SSE streams one tenant may hold in one process. */
    readonly streamClientsPerTenant: number;
    /** Put the transitions `eventBusTransitions` names on this EventBridge bus (AWS); unset: none. */
    readonly eventBusName: string | undefined;
    /** The transitions the deployment asked for on the bus; none unless named (checked by the notifier). */
    readonly eventBusTransitions: readonly string[];
    readonly eventBusSource: string;
  };
  /** The embedded stack `npm start` runs (or reuses) when no endpoint names another. */
  readonly local: {
    readonly dataDir: string;
    readonly dynamoPort: number;
    readonly sqsPort: number;
    /** Services the AWS SDK variables point elsewhere (LocalStack, AWS): not started locally. */
    readonly external: readonly ("dynamodb" | "sqs")[];
    /** Worker processes polling the work queue; 0 runs the worker in the API's process. */
    readonly workers: number;
    /** The longest an outcome write waits behind a queue backlog; 0: never. */
    readonly outcomeTrailMs: number;
  };
}

/**
 * Reads and validates the configuration. A bad or missing value fails with the variable's name.
 * `overrides` lets tests and the local runner set values without touching `process.env`.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Record<keyof z.input<typeof schema>, string>> = {},
): HourglassConfig {
  const merged: Record<string, string | undefined> = { ...env, ...overrides };
  for (const key of Object.keys(merged)) if (merged[key] === "") merged[key] = undefined;
  const parsed = schema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(String(issue.path[0] ?? "environment"), issue.message);
  }
  const e = parsed.data;
  const mode: Mode = e.HOURGLASS_MODE ?? (env.AWS_LAMBDA_FUNCTION_NAME ? "aws" : "local");
  const defaults = modeDefaults[mode];
  // Tokens mean several tenants share this process, and the embedded stack behind it has no
  // authentication of its own: private targets are then off unless asked for explicitly.
  const allowPrivate =
    e.HOURGLASS_WEBHOOK_ALLOW_PRIVATE ?? (defaults.allowPrivate && !e.HOURGLASS_API_TOKENS);
  // On AWS the master webhook secret is required only where webhooks are signed or the secret is
  // handed out (the worker and the API); the dispatcher is deliberately not given it. So a missing
  // secret fails where it is used (WebhookSigning), naming HOURGLASS_WEBHOOK_SECRET, not here.
  if (e.HOURGLASS_BACKOFF_MAX_MS < e.HOURGLASS_BACKOFF_BASE_MS) {
    throw new ConfigError("HOURGLASS_BACKOFF_MAX_MS", "must be at least HOURGLASS_BACKOFF_BASE_MS");
  }
  const tickMs = e.HOURGLASS_TICK_MS ?? defaults.tickMs;
  const lookAheadMs = (e.HOURGLASS_LOOKAHEAD_SECONDS ?? defaults.lookAheadSeconds) * 1000;
  if (mode === "aws" && (e.HOURGLASS_DELIVER_AHEAD_MS ?? 0) > 0) {
    throw new ConfigError(
      "HOURGLASS_DELIVER_AHEAD_MS",
      "must be 0 on AWS: the worker Lambda would be billed for each wait, and its timeout would cut the wait short",
    );
  }
  if (e.HOURGLASS_DELIVER_AHEAD_MS !== undefined && e.HOURGLASS_DELIVER_AHEAD_MS > lookAheadMs) {
    throw new ConfigError(
      "HOURGLASS_DELIVER_AHEAD_MS",
      `must be at most the look-ahead (HOURGLASS_LOOKAHEAD_SECONDS, ${lookAheadMs} ms): events are claimed no earlier`,
    );
  }
  const deliverAheadMs = e.HOURGLASS_DELIVER_AHEAD_MS ?? Math.min(defaults.deliverAheadMs, lookAheadMs);
  // The loader must promote an event before the claim window reaches it, with ticks to spare.
  const minimumHorizonSeconds = Math.ceil((lookAheadMs + 3 * tickMs) / 1000);
  if (e.HOURGLASS_INDEX_HORIZON_SECONDS < minimumHorizonSeconds) {
    throw new ConfigError(
      "HOURGLASS_INDEX_HORIZON_SECONDS",
      `must be at least the look-ahead plus three ticks (${minimumHorizonSeconds})`,
    );
  }
  return {
    mode,
    redis: { url: e.HOURGLASS_REDIS_URL, cluster: e.HOURGLASS_REDIS_CLUSTER },
    keyPrefix: e.HOURGLASS_KEY_PREFIX,
    shards: e.HOURGLASS_SHARDS,
    shardGroups: Math.min(e.HOURGLASS_SHARD_GROUPS, e.HOURGLASS_SHARDS),
    tables: {
      events: e.HOURGLASS_EVENTS_TABLE,
      leases: e.HOURGLASS_LEASES_TABLE,
      ledger: e.HOURGLASS_LEDGER_TABLE,
      schedules: e.HOURGLASS_SCHEDULES_TABLE,
    },
    schedules: {
      minIntervalMs: e.HOURGLASS_SCHEDULE_MIN_INTERVAL_SECONDS * 1000,
      perTenant: e.HOURGLASS_SCHEDULES_PER_TENANT,
      // Two ticks by default (at least a minute): a dispatcher a tick late is not downtime.
      missedAfterMs:
        (e.HOURGLASS_SCHEDULE_MISSED_AFTER_SECONDS ??
          Math.max(60, Math.ceil((2 * (e.HOURGLASS_TICK_MS ?? defaults.tickMs)) / 1000))) * 1000,
    },
    ledgerSnapshotEvery: e.HOURGLASS_LEDGER_SNAPSHOT_EVERY,
    queue: { url: e.HOURGLASS_QUEUE_URL, name: e.HOURGLASS_QUEUE_NAME },
    tickMs,
    lookAheadMs,
    deliverAheadMs,
    eventsPerMessage: e.HOURGLASS_EVENTS_PER_MESSAGE ?? defaults.eventsPerMessage,
    indexHorizonMs: e.HOURGLASS_INDEX_HORIZON_SECONDS * 1000,
    claimBatch: e.HOURGLASS_CLAIM_BATCH,
    shardInFlight: e.HOURGLASS_SHARD_IN_FLIGHT,
    tenantLimits: {
      createsPerSecond: e.HOURGLASS_TENANT_CREATES_PER_SECOND,
      createsBurst:
        e.HOURGLASS_TENANT_CREATES_BURST ?? Math.max(500, 2 * e.HOURGLASS_TENANT_CREATES_PER_SECOND),
      maxRunning: e.HOURGLASS_TENANT_MAX_RUNNING,
      limitedTypes: e.HOURGLASS_TENANT_LIMITED_TYPES,
    },
    dispatchLeaseMs: (e.HOURGLASS_DISPATCH_LEASE_SECONDS ?? defaults.dispatchLeaseSeconds) * 1000,
    handlerTimeoutMs: e.HOURGLASS_HANDLER_TIMEOUT_SECONDS * 1000,
    runLeaseMarginMs: e.HOURGLASS_RUN_LEASE_MARGIN_MS,
    retry: {
      maxAttempts: e.HOURGLASS_MAX_ATTEMPTS,
      baseMs: e.HOURGLASS_BACKOFF_BASE_MS,
      maxMs: e.HOURGLASS_BACKOFF_MAX_MS,
    },
    retentionSeconds: e.HOURGLASS_RETENTION_DAYS * 86_400,
    horizonMs: e.HOURGLASS_HORIZON_DAYS * 86_400_000,
    recovery: {
      graceMs: e.HOURGLASS_RECOVERY_GRACE_SECONDS * 1000,
      everyMs: e.HOURGLASS_RECOVERY_EVERY_SECONDS * 1000,
      reverifyMs: e.HOURGLASS_RECOVERY_REVERIFY_SECONDS * 1000,
    },
    journal: e.HOURGLASS_JOURNAL,
    webhook: {
      allowPrivate,
      allowLoopback: allowPrivate && mode === "local",
      refusedPorts:
        mode === "local"
          ? localServicePorts(merged, e.HOURGLASS_REDIS_URL, e.PORT, {
              dynamodb: e.HOURGLASS_DYNAMODB_PORT,
              sqs: e.HOURGLASS_SQS_PORT,
            })
          : new Set<number>(),
      // Locally without one, the data dir's own random secret: never a constant anyone can know.
      secret:
        e.HOURGLASS_WEBHOOK_SECRET ?? (mode === "local" ? dataDirSecret(e.HOURGLASS_DATA_DIR) : undefined),
      timeoutMs: e.HOURGLASS_WEBHOOK_TIMEOUT_MS,
      requestsPerOrigin: e.HOURGLASS_WEBHOOK_REQUESTS_PER_ORIGIN,
    },
    lambdaTargets: e.HOURGLASS_LAMBDA_TARGETS ?? {},
    apiTokens: new Map(
      (e.HOURGLASS_API_TOKENS?.split(",") ?? []).map((pair) => {
        const [tenant, token] = pair.split(":") as [string, string];
        return [token, tenant];
      }),
    ),
    adminTokens: e.HOURGLASS_ADMIN_TOKENS?.split(",") ?? [],
    adminPrincipals: e.HOURGLASS_ADMIN_PRINCIPALS?.split(",") ?? [],
    allowFederatedUsers: e.HOURGLASS_ALLOW_FEDERATED_USERS,
    allowedHosts: e.HOURGLASS_ALLOWED_HOSTS?.split(",") ?? [],
    maxBodyBytes: e.HOURGLASS_MAX_BODY_BYTES,
    secretArns: e.HOURGLASS_SECRET_ARNS?.split(",") ?? [],
    logLevel: e.LOG_LEVEL,
    port: e.PORT,
    notifications: {
      enabled: e.HOURGLASS_NOTIFICATIONS,
      stream: e.HOURGLASS_NOTIFY_STREAM,
      streamMaxLen: e.HOURGLASS_NOTIFY_STREAM_MAXLEN,
      flushMs: e.HOURGLASS_NOTIFY_FLUSH_MS ?? (env.AWS_LAMBDA_FUNCTION_NAME ? undefined : 50),
      maxBuffered: e.HOURGLASS_NOTIFY_BUFFER,
      streamClientsPerTenant: e.HOURGLASS_STREAM_CLIENTS_PER_TENANT,
      eventBusName: e.HOURGLASS_EVENT_BUS_NAME,
      eventBusTransitions: e.HOURGLASS_EVENT_BUS_TRANSITIONS?.split(",") ?? [],
      eventBusSource: e.HOURGLASS_EVENT_BUS_SOURCE,
    },
    local: {
      dataDir: e.HOURGLASS_DATA_DIR,
      dynamoPort: e.HOURGLASS_DYNAMODB_PORT,
      sqsPort: e.HOURGLASS_SQS_PORT,
      external: [
        ...(e.AWS_ENDPOINT_URL || e.AWS_ENDPOINT_URL_DYNAMODB ? (["dynamodb"] as const) : []),
        ...(e.AWS_ENDPOINT_URL || e.AWS_ENDPOINT_URL_SQS ? (["sqs"] as const) : []),
      ],
      workers: e.HOURGLASS_LOCAL_WORKERS ?? availableParallelism(),
      outcomeTrailMs: e.HOURGLASS_LOCAL_OUTCOME_TRAIL_MS,
    },
  };
}

/** The data dir's webhook master secret (made on first use), failing with the variable to fix. */
function dataDirSecret(dataDir: string): string {
  try {
    return localWebhookSecret(dataDir);
  } catch (error) {
    if (!(error instanceof LocalWebhookSecretError)) throw error;
    throw new ConfigError(
      "HOURGLASS_WEBHOOK_SECRET",
      `not set, and the data dir's secret is unusable: ${error.message}`,
    );
  }
}

/**
 * The ports of the embedded stack (Redis and its cluster bus, DynamoDB Local, the SQS emulator)
 * and of the API itself, read from the same variables the clients use. A stand-in with no
 * endpoint variable is the one `npm start` runs itself, on HOURGLASS_DYNAMODB_PORT or
 * HOURGLASS_SQS_PORT (their defaults 8000 and 4566): that port is the one to refuse, since
 * DynamoDB Local listens on every interface.
 */
function localServicePorts(
  env: Record<string, string | undefined>,
  redisUrl: string,
  apiPort: number,
  embedded: { readonly dynamodb: number; readonly sqs: number },
): ReadonlySet<number> {
  const portOf = (url: string | undefined, fallback: number) => {
    if (!url) return fallback;
    try {
      const parsed = new URL(url);
      return Number(parsed.port || (parsed.protocol === "https:" ? 443 : 80));
    } catch {
      return fallback;
    }
  };
  const redis = portOf(redisUrl, 6379);
  const ports = [
    redis,
    redis + 10_000,
    portOf(env.AWS_ENDPOINT_URL_DYNAMODB ?? env.AWS_ENDPOINT_URL, embedded.dynamodb),
    portOf(env.AWS_ENDPOINT_URL_SQS ?? env.AWS_ENDPOINT_URL, embedded.sqs),
  ];
  if (apiPort > 0) ports.push(apiPort);
  return new Set(ports);
}
