import { z } from "zod";

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
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

export type Mode = "local" | "aws";

/** Defaults that differ between a laptop and AWS: a laptop ticks every second, AWS every minute. */
/**
 * The dispatch lease is how long a sent event may wait for its worker before it is sent again:
 * it must outlast the look-ahead (the longest SQS delay the dispatcher uses) with room to spare,
 * and it is also how late an event can be when the queue loses its message.
 */
const modeDefaults: Record<
  Mode,
  { tickMs: number; lookAheadSeconds: number; allowPrivate: boolean; dispatchLeaseSeconds: number }
> = {
  local: { tickMs: 1_000, lookAheadSeconds: 5, allowPrivate: true, dispatchLeaseSeconds: 30 },
  aws: { tickMs: 60_000, lookAheadSeconds: 120, allowPrivate: false, dispatchLeaseSeconds: 300 },
};

const schema = z.object({
  HOURGLASS_MODE: z.enum(["local", "aws"]).optional(),
  HOURGLASS_REDIS_URL: z.string().url().default("redis://127.0.0.1:6379"),
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
  HOURGLASS_LEDGER_SNAPSHOT_EVERY: int(2, 100_000).default(500),
  HOURGLASS_QUEUE_URL: z.string().url().optional(),
  HOURGLASS_QUEUE_NAME: z.string().min(1).default("hourglass-work"),
  HOURGLASS_TICK_MS: int(50, 300_000).optional(),
  HOURGLASS_LOOKAHEAD_SECONDS: int(0, 900).optional(),
  HOURGLASS_CLAIM_BATCH: int(1, 5_000).default(500),
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
  HOURGLASS_JOURNAL: bool.default(true),
  HOURGLASS_WEBHOOK_ALLOW_PRIVATE: bool.optional(),
  HOURGLASS_WEBHOOK_SECRET: z.string().min(16).optional(),
  HOURGLASS_SECRET_ARNS: z
    .string()
    .regex(/^arn:[^,]+(,arn:[^,]+)*$/, "secret ARNs separated by commas")
    .optional(),
  HOURGLASS_WEBHOOK_TIMEOUT_MS: int(100, 900_000).default(10_000),
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
  HOURGLASS_MAX_BODY_BYTES: int(1_024, 10_485_760).default(1_048_576),
  LOG_LEVEL: z.enum(["DEBUG", "INFO", "WARN", "ERROR", "SILENT"]).default("INFO"),
  PORT: int(0, 65_535).default(3000),
});

export interface HourglassConfig {
  readonly mode: Mode;
  readonly redis: { readonly url: string; readonly cluster: boolean };
  readonly keyPrefix: string;
  readonly shards: number;
  /** Dispatchers lease shards in this many groups, so several can share the work. */
  readonly shardGroups: number;
  readonly tables: { readonly events: string; readonly leases: string; readonly ledger: string };
  /** A snapshot summarises a SKU's ledger once this many entries follow the last one. */
  readonly ledgerSnapshotEvery: number;
  readonly queue: { readonly url: string | undefined; readonly name: string };
  readonly tickMs: number;
  readonly lookAheadMs: number;
  readonly claimBatch: number;
  readonly dispatchLeaseMs: number;
  readonly handlerTimeoutMs: number;
  /** Added to the handler's timeout for the lease of a running event (time for the ack itself). */
  readonly runLeaseMarginMs: number;
  readonly retry: { readonly maxAttempts: number; readonly baseMs: number; readonly maxMs: number };
  readonly retentionSeconds: number;
  readonly horizonMs: number;
  readonly recovery: { readonly graceMs: number; readonly everyMs: number };
  readonly journal: boolean;
  readonly webhook: {
    readonly allowPrivate: boolean;
    readonly secret: string | undefined;
    readonly timeoutMs: number;
  };
  /** Event types handled by a Lambda function of the user's: type → function name or ARN. */
  readonly lambdaTargets: Readonly<Record<string, string>>;
  /** Bearer token → tenant. Empty: no tokens required (one default tenant, or IAM on AWS). */
  readonly apiTokens: ReadonlyMap<string, string>;
  /** Bearer tokens of the admin routes (`/v1/admin/*`), which act on every tenant. */
  readonly adminTokens: readonly string[];
  /** On AWS: the IAM roles or users allowed on the admin routes (set by the CDK construct). */
  readonly adminPrincipals: readonly string[];
  readonly maxBodyBytes: number;
  /** Secrets Manager secrets holding the Redis AUTH token and the webhook secret (AWS). */
  readonly secretArns: readonly string[];
  readonly logLevel: "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";
  readonly port: number;
}

/** The secret that signs webhooks in local mode when none is configured; AWS mode requires one. */
export const LOCAL_WEBHOOK_SECRET = "hourglass-local-development-secret";

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
  if (mode === "aws" && !e.HOURGLASS_WEBHOOK_SECRET && !e.HOURGLASS_SECRET_ARNS) {
    throw new ConfigError(
      "HOURGLASS_WEBHOOK_SECRET",
      "required in aws mode (16 characters or more), or HOURGLASS_SECRET_ARNS",
    );
  }
  if (e.HOURGLASS_BACKOFF_MAX_MS < e.HOURGLASS_BACKOFF_BASE_MS) {
    throw new ConfigError("HOURGLASS_BACKOFF_MAX_MS", "must be at least HOURGLASS_BACKOFF_BASE_MS");
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
    },
    ledgerSnapshotEvery: e.HOURGLASS_LEDGER_SNAPSHOT_EVERY,
    queue: { url: e.HOURGLASS_QUEUE_URL, name: e.HOURGLASS_QUEUE_NAME },
    tickMs: e.HOURGLASS_TICK_MS ?? defaults.tickMs,
    lookAheadMs: (e.HOURGLASS_LOOKAHEAD_SECONDS ?? defaults.lookAheadSeconds) * 1000,
    claimBatch: e.HOURGLASS_CLAIM_BATCH,
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
    },
    journal: e.HOURGLASS_JOURNAL,
    webhook: {
      allowPrivate: e.HOURGLASS_WEBHOOK_ALLOW_PRIVATE ?? defaults.allowPrivate,
      secret: e.HOURGLASS_WEBHOOK_SECRET ?? (mode === "local" ? LOCAL_WEBHOOK_SECRET : undefined),
      timeoutMs: e.HOURGLASS_WEBHOOK_TIMEOUT_MS,
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
    maxBodyBytes: e.HOURGLASS_MAX_BODY_BYTES,
    secretArns: e.HOURGLASS_SECRET_ARNS?.split(",") ?? [],
    logLevel: e.LOG_LEVEL,
    port: e.PORT,
  };
}
