import { readFileSync } from "node:fs";
import { join } from "node:path";
import { TemplateShapeError } from "./errors.ts";

/** One resource of a CloudFormation template, as synthesized (intrinsics not yet resolved). */
export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly Metadata?: Record<string, unknown>;
}

export interface FunctionSpec {
  readonly logicalId: string;
  /** The construct path's last meaningful part: "ApiFunction" → "api". */
  readonly role: "api" | "dispatcher" | "worker" | "other";
  /** `index.handler`: file `index` (.mjs/.js/.cjs) in the asset, export `handler`. */
  readonly handler: string;
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** Absolute path of the bundled asset folder in cdk.out. */
  readonly assetDir: string;
  readonly environment: Readonly<Record<string, unknown>>;
  readonly roleLogicalId: string;
  readonly reservedConcurrency: number | undefined;
  /** AWS::Lambda::EventInvokeConfig for `$LATEST`; Lambda's defaults when absent. */
  readonly async: { readonly maximumRetryAttempts: number; readonly maximumEventAgeSeconds: number };
}

export interface QueueSpec {
  readonly logicalId: string;
  readonly properties: Readonly<Record<string, unknown>>;
}

export interface EventSourceSpec {
  readonly logicalId: string;
  readonly functionLogicalId: string;
  readonly queueLogicalId: string;
  readonly batchSize: number;
  readonly batchingWindowSeconds: number;
  readonly reportBatchItemFailures: boolean;
  /** ScalingConfig.MaximumConcurrency; Lambda's own bound (1,000) when absent. */
  readonly maximumConcurrency: number;
  readonly enabled: boolean;
}

export interface ScheduleSpec {
  readonly logicalId: string;
  readonly expression: string;
  readonly group: string;
  readonly state: "ENABLED" | "DISABLED";
  readonly targetFunctionLogicalId: string;
  readonly targetRoleArn: unknown;
  readonly retry: { readonly maximumRetryAttempts: number; readonly maximumEventAgeSeconds: number };
}

export type ApiSpec =
  | { readonly api: "rest"; readonly logicalId: string; readonly stage: string; readonly apiKeys: boolean }
  | { readonly api: "http"; readonly logicalId: string; readonly payloadFormat: "1.0" | "2.0" };

export interface CacheSpec {
  readonly logicalId: string;
  readonly shape: "replication-group" | "serverless";
  /** The ACL user the functions connect as (serverless RBAC); undefined: the default user's AUTH token. */
  readonly user: string | undefined;
  /** The secret whose `redisAuthToken` is the password. */
  readonly secretLogicalId: string;
}

export interface StackTemplate {
  readonly name: string;
  readonly cdkOut: string;
  readonly resources: Readonly<Record<string, TemplateResource>>;
  readonly outputs: Readonly<Record<string, { readonly Value: unknown }>>;
  readonly functions: readonly FunctionSpec[];
  readonly queues: readonly QueueSpec[];
  readonly eventSources: readonly EventSourceSpec[];
  readonly schedules: readonly ScheduleSpec[];
  readonly api: ApiSpec;
  readonly cache: CacheSpec | undefined;
  /** Logical ids of AWS::IAM::Policy documents attached to each role (by the role's logical id). */
  readonly rolePolicies: ReadonlyMap<string, readonly { name: string; document: unknown }[]>;
}

/** Lambda's defaults for asynchronous invocation without an EventInvokeConfig. */
const LAMBDA_ASYNC_DEFAULTS = { maximumRetryAttempts: 2, maximumEventAgeSeconds: 21_600 };
/** EventBridge Scheduler's defaults for a target without a RetryPolicy. */
const SCHEDULER_RETRY_DEFAULTS = { maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 };
const LAMBDA_MAX_CONCURRENCY = 1_000;

/** Reads `<stack>.template.json` from a cdk.out folder into what the harness runs. */
export function readStackTemplate(cdkOut: string, stackName: string): StackTemplate {
  const template = JSON.parse(readFileSync(join(cdkOut, `${stackName}.template.json`), "utf8")) as {
    Resources: Record<string, TemplateResource>;
    Outputs?: Record<string, { Value: unknown }>;
  };
  const resources = template.Resources;
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);
  const refId = (value: unknown, where: string): string => {
    const id = (value as { Ref?: unknown } | undefined)?.Ref;
    const att = (value as { "Fn::GetAtt"?: unknown[] } | undefined)?.["Fn::GetAtt"];
    const found = typeof id === "string" ? id : Array.isArray(att) ? String(att[0]) : undefined;
    if (!found)
      throw new TemplateShapeError(where, `expected a Ref or Fn::GetAtt, got ${JSON.stringify(value)}`);
    return found;
  };

  const invokeConfigs = new Map(
    ofType("AWS::Lambda::EventInvokeConfig").map(([, r]) => [
      refId(r.Properties?.FunctionName, "EventInvokeConfig.FunctionName"),
      {
        maximumRetryAttempts: Number(
          r.Properties?.MaximumRetryAttempts ?? LAMBDA_ASYNC_DEFAULTS.maximumRetryAttempts,
        ),
        maximumEventAgeSeconds: Number(
          r.Properties?.MaximumEventAgeInSeconds ?? LAMBDA_ASYNC_DEFAULTS.maximumEventAgeSeconds,
        ),
      },
    ]),
  );
  const functions = ofType("AWS::Lambda::Function").map(([logicalId, r]): FunctionSpec => {
    const p = r.Properties ?? {};
    const assetPath = r.Metadata?.["aws:asset:path"];
    if (typeof assetPath !== "string")
      throw new TemplateShapeError(logicalId, "no aws:asset:path metadata: is it a bundled asset?");
    const cdkPath = String(r.Metadata?.["aws:cdk:path"] ?? "");
    const role = /\/ApiFunction\//.test(cdkPath)
      ? "api"
      : /\/DispatcherFunction\//.test(cdkPath)
        ? "dispatcher"
        : /\/WorkerFunction\//.test(cdkPath)
          ? "worker"
          : "other";
    return {
      logicalId,
      role,
      handler: String(p.Handler),
      runtime: String(p.Runtime),
      timeoutSeconds: Number(p.Timeout ?? 3),
      memoryMb: Number(p.MemorySize ?? 128),
      assetDir: join(cdkOut, assetPath),
      environment: ((p.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ??
        {}) as Record<string, unknown>,
      roleLogicalId: refId(p.Role, `${logicalId}.Role`),
      reservedConcurrency:
        p.ReservedConcurrentExecutions === undefined ? undefined : Number(p.ReservedConcurrentExecutions),
      async: invokeConfigs.get(logicalId) ?? LAMBDA_ASYNC_DEFAULTS,
    };
  });

  const eventSources = ofType("AWS::Lambda::EventSourceMapping").map(([logicalId, r]): EventSourceSpec => {
    const p = r.Properties ?? {};
    return {
      logicalId,
      functionLogicalId: refId(p.FunctionName, `${logicalId}.FunctionName`),
      queueLogicalId: refId(p.EventSourceArn, `${logicalId}.EventSourceArn`),
      batchSize: Number(p.BatchSize ?? 10),
      batchingWindowSeconds: Number(p.MaximumBatchingWindowInSeconds ?? 0),
      reportBatchItemFailures: ((p.FunctionResponseTypes as string[] | undefined) ?? []).includes(
        "ReportBatchItemFailures",
      ),
      maximumConcurrency: Number(
        (p.ScalingConfig as { MaximumConcurrency?: number } | undefined)?.MaximumConcurrency ??
          LAMBDA_MAX_CONCURRENCY,
      ),
      enabled: p.Enabled !== false,
    };
  });

  const schedules = ofType("AWS::Scheduler::Schedule").map(([logicalId, r]): ScheduleSpec => {
    const p = r.Properties ?? {};
    const target = (p.Target ?? {}) as Record<string, unknown>;
    const retry = (target.RetryPolicy ?? {}) as Record<string, unknown>;
    return {
      logicalId,
      expression: String(p.ScheduleExpression),
      group: typeof p.GroupName === "string" ? p.GroupName : "default",
      state: p.State === "DISABLED" ? "DISABLED" : "ENABLED",
      targetFunctionLogicalId: refId(target.Arn, `${logicalId}.Target.Arn`),
      targetRoleArn: target.RoleArn,
      retry: {
        maximumRetryAttempts: Number(
          retry.MaximumRetryAttempts ?? SCHEDULER_RETRY_DEFAULTS.maximumRetryAttempts,
        ),
        maximumEventAgeSeconds: Number(
          retry.MaximumEventAgeInSeconds ?? SCHEDULER_RETRY_DEFAULTS.maximumEventAgeSeconds,
        ),
      },
    };
  });

  const rolePolicies = new Map<string, { name: string; document: unknown }[]>();
  for (const [logicalId, r] of ofType("AWS::IAM::Policy")) {
    for (const role of (r.Properties?.Roles as unknown[] | undefined) ?? []) {
      const roleId = refId(role, `${logicalId}.Roles`);
      const list = rolePolicies.get(roleId) ?? [];
      list.push({ name: logicalId, document: r.Properties?.PolicyDocument });
      rolePolicies.set(roleId, list);
    }
  }
  for (const [logicalId, r] of ofType("AWS::IAM::Role")) {
    const inline = (r.Properties?.Policies as { PolicyName: string; PolicyDocument: unknown }[]) ?? [];
    if (inline.length === 0) continue;
    const list = rolePolicies.get(logicalId) ?? [];
    for (const policy of inline) list.push({ name: policy.PolicyName, document: policy.PolicyDocument });
    rolePolicies.set(logicalId, list);
  }

  return {
    name: stackName,
    cdkOut,
    resources,
    outputs: template.Outputs ?? {},
    functions,
    queues: ofType("AWS::SQS::Queue").map(([logicalId, r]) => ({
      logicalId,
      properties: r.Properties ?? {},
    })),
    eventSources,
    schedules,
    api: readApi(resources, refId),
    cache: readCache(resources, refId),
    rolePolicies,
  };
}

function readApi(
  resources: Record<string, TemplateResource>,
  refId: (value: unknown, where: string) => string,
): ApiSpec {
  const entries = Object.entries(resources);
  const rest = entries.find(([, r]) => r.Type === "AWS::ApiGateway::RestApi");
  if (rest) {
    const stage = entries.find(([, r]) => r.Type === "AWS::ApiGateway::Stage");
    const apiKeys = entries.some(
      ([, r]) => r.Type === "AWS::ApiGateway::Method" && r.Properties?.ApiKeyRequired === true,
    );
    return {
      api: "rest",
      logicalId: rest[0],
      stage: String(stage?.[1].Properties?.StageName ?? "prod"),
      apiKeys,
    };
  }
  const http = entries.find(([, r]) => r.Type === "AWS::ApiGatewayV2::Api");
  if (!http) throw new TemplateShapeError("(template)", "no REST API and no HTTP API");
  const integration = entries.find(
    ([, r]) =>
      r.Type === "AWS::ApiGatewayV2::Integration" &&
      refId(r.Properties?.ApiId, "Integration.ApiId") === http[0],
  );
  const format = String(integration?.[1].Properties?.PayloadFormatVersion ?? "2.0");
  if (format !== "1.0" && format !== "2.0")
    throw new TemplateShapeError(integration?.[0] ?? http[0], `payload format ${format}`);
  return { api: "http", logicalId: http[0], payloadFormat: format };
}

function readCache(
  resources: Record<string, TemplateResource>,
  refId: (value: unknown, where: string) => string,
): CacheSpec | undefined {
  const entries = Object.entries(resources);
  const secretOf = (value: unknown, where: string) => {
    // `{{resolve:secretsmanager:<Ref secret>:SecretString:redisAuthToken::}}`, inside a Join.
    const parts = ((value as { "Fn::Join"?: [string, unknown[]] })?.["Fn::Join"]?.[1] ?? []) as unknown[];
    const ref = parts.find((part) => typeof part === "object" && part !== null);
    return refId(ref, where);
  };
  const group = entries.find(([, r]) => r.Type === "AWS::ElastiCache::ReplicationGroup");
  if (group) {
    return {
      logicalId: group[0],
      shape: "replication-group",
      user: undefined,
      secretLogicalId: secretOf(group[1].Properties?.AuthToken, `${group[0]}.AuthToken`),
    };
  }
  const serverless = entries.find(([, r]) => r.Type === "AWS::ElastiCache::ServerlessCache");
  if (!serverless) return undefined;
  // The user the functions connect as: the one that is switched on (a `default` user, if any, is off).
  const user = entries.find(
    ([, r]) =>
      r.Type === "AWS::ElastiCache::User" && String(r.Properties?.AccessString ?? "").startsWith("on "),
  );
  if (!user) throw new TemplateShapeError(serverless[0], "serverless cache without an enabled user");
  const passwords = (user[1].Properties?.AuthenticationMode as { Passwords?: unknown[] } | undefined)
    ?.Passwords;
  return {
    logicalId: serverless[0],
    shape: "serverless",
    user: String(user[1].Properties?.UserName),
    secretLogicalId: secretOf(passwords?.[0], `${user[0]}.Passwords`),
  };
}
