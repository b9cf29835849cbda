import { cpSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve as resolvePath } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";
import { type RunningStack, startLocalStack } from "../../shared/local/stack.ts";
import { type ApiGateway, type CallerKey, startApiGateway } from "./api-gateway/index.ts";
import {
  type AwsGateway,
  awsLatencyModel,
  type GatewayPrincipal,
  startAwsGateway,
} from "./aws-gateway/index.ts";
import { deployStack } from "./deploy.ts";
import { resolve, resolveString } from "./intrinsics.ts";
import { LambdaFunction } from "./lambda-function.ts";
import { startReaper } from "./reaper.ts";
import { startTlsRedis, type TlsRedis } from "./redis-tls.ts";
import { ScheduleInvoker } from "./schedule-invoker.ts";
import { checkServiceHops } from "./service-hops.ts";
import { SqsEventSource } from "./sqs-event-source.ts";
import { defaultOutDir, type Profile, synthesize } from "./synth.ts";
import { type FunctionSpec, readStackTemplate, type StackTemplate } from "./template.ts";

export const REGION = "us-east-1";
export const ACCOUNT = "000000000000";
/** The role `start:aws` names as the deployment's admin (context `admins`) unless told otherwise. */
export const OPERATOR_ROLE = `arn:aws:iam::${ACCOUNT}:role/HourglassOperator`;
/**
 * The operator's credentials: SigV4 at the API maps them to a session of OPERATOR_ROLE, and the AWS
 * APIs `hourglass … --aws` calls (CloudFormation, Scheduler, SQS, CloudWatch) accept them.
 */
export const OPERATOR_KEY = { accessKeyId: "operator", secretAccessKey: "operator" } as const;

export interface AwsShapedOptions {
  readonly profile: Profile;
  /** Extra synth context (`-c name=value`), e.g. `webhookAllowPrivate: "true"`. */
  readonly context?: Readonly<Record<string, string>>;
  /** A cdk.out to run instead of synthesizing. */
  readonly cdkOut?: string;
  /** The local stack's name: prefix of every physical name, and `--stack` for the CLI. @default "Hourglass" */
  readonly stackName?: string;
  /** The API's port. @default 0 (any) */
  readonly port?: number;
  /** @default ".hourglass/aws-shaped" */
  readonly dataDir?: string;
  /** Delays drawn from AWS's published latencies on every AWS call and Redis round trip. */
  readonly latency?: "aws";
  /** Stand-ins already running (the test suite's); started here when absent. */
  readonly dynamoEndpoint?: string;
  readonly sqsEndpoint?: string;
  /** Caller keys for SigV4 at the API beyond the operator's; without them any key signs as a user. */
  readonly keys?: ReadonlyMap<string, CallerKey>;
  /** Execution environments per function this machine runs at once. @default { api: 4, dispatcher: 2, worker: 8 } */
  readonly maxEnvironments?: Partial<Record<"api" | "dispatcher" | "worker", number>>;
  /** Fire the dispatcher's schedule at start as well as on its rate. @default true */
  readonly fireAtStart?: boolean;
  readonly log?: (line: string) => void;
}

export interface AwsShaped {
  /** The API's base URL, as the `ApiUrl` output would give it. */
  readonly url: string;
  /** The endpoint every AWS SDK call goes to (for `AWS_ENDPOINT_URL` of an operator's CLI). */
  readonly awsEndpoint: string;
  readonly stackName: string;
  readonly template: StackTemplate;
  readonly outputs: Readonly<Record<string, string>>;
  readonly gateway: AwsGateway;
  /** Who calls AWS: each function's role (with its resolved policies), and the operator. */
  readonly principals: readonly GatewayPrincipal[];
  readonly functions: Readonly<Record<string, LambdaFunction>>;
  readonly eventSources: readonly SqsEventSource[];
  readonly schedules: readonly ScheduleInvoker[];
  readonly redis: TlsRedis | undefined;
  stop(): Promise<void>;
}

/**
 * Runs the synthesized stack as AWS runs it, on this machine: each function's bundle from cdk.out in
 * processes of its own with exactly the template's environment (references resolved to the
 * stand-ins), the API behind SigV4 as API Gateway, the worker behind an SQS event source mapping,
 * the dispatcher on its Scheduler rate, Redis with TLS and AUTH, and every AWS call checked against
 * the calling function's role.
 */
export async function startAwsShaped(options: AwsShapedOptions): Promise<AwsShaped> {
  const log = options.log ?? (() => {});
  const dataDir = resolvePath(options.dataDir ?? join(".hourglass", "aws-shaped"));
  const profileDir = join(dataDir, options.profile);
  mkdirSync(join(profileDir, "logs"), { recursive: true });
  const stackName = options.stackName ?? "Hourglass";
  const stoppers: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    for (const stop of [...stoppers].reverse()) await stop().catch(() => {});
    stoppers.length = 0;
  };

  try {
    const cdkOut =
      options.cdkOut ??
      (
        await synthesize({
          profile: options.profile,
          outDir: defaultOutDir(dataDir, options.profile),
          context: { admins: OPERATOR_ROLE, ...options.context },
        })
      ).cdkOut;
    const template = readStackTemplate(cdkOut, "Hourglass");
    log(`template: ${cdkOut} (${template.functions.length} functions, ${template.api.api} API)`);

    let local: RunningStack | undefined;
    if (!options.dynamoEndpoint || !options.sqsEndpoint) {
      local = await startLocalStack({
        dataDir: join(dataDir, "stand-ins"),
        persist: false,
        skip: ["redis"],
        log: (line) => log(`stand-ins: ${line}`),
      });
      stoppers.push(() => local!.stop());
    }
    const dynamoEndpoint = options.dynamoEndpoint ?? local!.dynamoEndpoint;
    const sqsEndpoint = options.sqsEndpoint ?? local!.sqsEndpoint;
    const direct = { region: REGION, credentials: { accessKeyId: "deploy", secretAccessKey: "deploy" } };

    const latency = options.latency === "aws" ? awsLatencyModel() : undefined;
    let redis: TlsRedis | undefined;
    const deployment = await deployStack(template, {
      region: REGION,
      accountId: ACCOUNT,
      stackName,
      dynamo: new DynamoDBClient({ ...direct, endpoint: dynamoEndpoint }),
      sqs: new SQSClient({ ...direct, endpoint: sqsEndpoint }),
      startCache: async (spec, password) => {
        redis = await startTlsRedis({
          shape: spec.shape,
          password,
          ...(spec.user && { user: spec.user }),
          dir: join(profileDir, "redis"),
          ...(latency && { latency: latency.redis }),
        });
        stoppers.push(() => redis!.stop());
        return { host: redis.host, port: redis.port };
      },
    });
    const { context } = deployment;
    // As AWS would refuse them at the first tick or request: the calls AWS makes into the functions.
    for (const hop of await checkServiceHops(template, context)) log(`allowed: ${hop}`);

    // Each function calls AWS as its role: an access key per function, mapped to the role's policies.
    const principals = new Map<string, GatewayPrincipal>();
    const credentials = new Map<string, { accessKeyId: string; secretAccessKey: string }>();
    for (const spec of template.functions) {
      const accessKeyId = `ASIA${spec.role.toUpperCase()}${spec.logicalId.slice(-6)}`.slice(0, 20);
      credentials.set(spec.logicalId, { accessKeyId, secretAccessKey: `${spec.logicalId}-secret` });
      const roleArn = resolveString(
        { "Fn::GetAtt": [spec.roleLogicalId, "Arn"] },
        context,
        `${spec.logicalId}.Role`,
      );
      principals.set(accessKeyId, {
        name: spec.role,
        arn: roleArn,
        policies: (template.rolePolicies.get(spec.roleLogicalId) ?? []).map((policy) => ({
          name: policy.name,
          document: resolve(policy.document, context, policy.name) as { Statement: unknown[] },
        })),
      });
    }
    principals.set(OPERATOR_KEY.accessKeyId, {
      name: "operator",
      arn: `arn:aws:sts::${ACCOUNT}:assumed-role/HourglassOperator/cli`,
      // The operator's own credentials: not in the template, so their policy is not checked.
      policies: [
        {
          name: "operator",
          document: { Version: "2012-10-17", Statement: [{ Effect: "Allow", Action: "*", Resource: "*" }] },
        },
      ],
    });

    const schedules = template.schedules.map((schedule) => ({
      name: resolveString({ Ref: schedule.logicalId }, context, schedule.logicalId),
      group: schedule.group,
      state: schedule.state,
      expression: schedule.expression,
      targetArn: resolveString(
        { "Fn::GetAtt": [schedule.targetFunctionLogicalId, "Arn"] },
        context,
        schedule.logicalId,
      ),
      roleArn: resolveString(schedule.targetRoleArn, context, `${schedule.logicalId}.Target.RoleArn`),
    }));
    const alarms = Object.entries(template.resources)
      .filter(([, r]) => r.Type === "AWS::CloudWatch::Alarm")
      .map(([id]) => resolveString({ Ref: id }, context, id));

    const api = { url: "" };
    const outputs = { ...deployment.outputs };
    const gateway = await startAwsGateway({
      region: REGION,
      accountId: ACCOUNT,
      dynamoEndpoint,
      sqsEndpoint,
      principals,
      secrets: deployment.secrets,
      // DescribeStacks reads the outputs at call time: ApiUrl is known once the API listens.
      stacks: [
        {
          name: stackName,
          stackId: resolveString({ Ref: "AWS::StackId" }, context, "AWS::StackId"),
          get outputs() {
            return outputs;
          },
        },
      ],
      schedules,
      alarms,
      ...(latency && { latency: latency.aws }),
    });
    stoppers.push(() => gateway.stop());

    // Each bundle runs from a copy outside the repository, as from /var/task: a bare import the
    // bundle left out must fail here as it fails on Lambda, not resolve in this repo's node_modules.
    const taskRoot = mkdtempSync(join(tmpdir(), "hg-lambda-"));
    stoppers.push(async () => rmSync(taskRoot, { recursive: true, force: true }));
    const reaper = startReaper(join(taskRoot, "pids"));
    stoppers.push(async () => reaper.stop());
    const functions: Record<string, LambdaFunction> = {};
    for (const deployed of template.functions) {
      const spec = { ...deployed, assetDir: join(taskRoot, deployed.role) };
      cpSync(deployed.assetDir, spec.assetDir, { recursive: true });
      const name = resolveString({ Ref: spec.logicalId }, context, spec.logicalId);
      const fn = new LambdaFunction({
        spec,
        name,
        arn: resolveString({ "Fn::GetAtt": [spec.logicalId, "Arn"] }, context, spec.logicalId),
        environment: {
          ...lambdaRuntimeVariables(spec, name, credentials.get(spec.logicalId)!),
          ...Object.fromEntries(
            Object.entries(spec.environment).map(([key, value]) => [
              key,
              resolveString(value, context, `${spec.logicalId}.Environment.${key}`),
            ]),
          ),
          // What stands in for AWS's network, not the function's settings: every AWS API at the
          // gateway, and the throwaway CA that signed the cache's certificate, as Amazon's CA is
          // trusted on Lambda.
          AWS_ENDPOINT_URL: gateway.url,
          ...(redis && { NODE_EXTRA_CA_CERTS: redis.caFile }),
          // Node 20 here; Lambda runs the template's runtime, where the SDK has nothing to say.
          AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true",
        },
        logFile: join(profileDir, "logs", `${spec.role}.log`),
        onSpawn: (pid) => reaper.add(pid),
        maxEnvironments:
          (options.maxEnvironments?.[spec.role as "api"] ??
            { api: 4, dispatcher: 2, worker: 8 }[spec.role as "api"]) ||
          2,
      });
      functions[spec.role] = fn;
      stoppers.push(() => fn.stop());
    }

    const eventSources = template.eventSources.map((spec) => {
      const target = template.functions.find((f) => f.logicalId === spec.functionLogicalId)!;
      const source = new SqsEventSource({
        spec,
        queueUrl: deployment.queueUrl(spec.queueLogicalId),
        queueArn: deployment.queueArn(spec.queueLogicalId),
        region: REGION,
        sqs: new SQSClient({
          region: REGION,
          endpoint: gateway.url,
          credentials: credentials.get(target.logicalId)!,
        }),
        fn: functions[target.role]!,
        log,
      });
      stoppers.push(() => source.stop());
      return source;
    });
    for (const source of eventSources) await source.start();

    const invokers = template.schedules.map((schedule, i) => {
      const target = template.functions.find((f) => f.logicalId === schedule.targetFunctionLogicalId)!;
      const { name, group } = schedules[i]!;
      const invoker = new ScheduleInvoker({
        schedule,
        fn: functions[target.role]!,
        target,
        state: () => gateway.scheduleState(group, name) ?? schedule.state,
        log,
        ...(options.fireAtStart !== undefined && { fireAtStart: options.fireAtStart }),
      });
      stoppers.push(() => invoker.stop());
      return invoker;
    });

    const apiFunction = functions.api!;
    const apiGateway: ApiGateway = await startApiGateway({
      kind:
        template.api.api === "rest"
          ? { api: "rest", stage: template.api.stage, apiKeys: template.api.apiKeys }
          : { api: "http", payloadFormat: template.api.payloadFormat },
      region: REGION,
      accountId: ACCOUNT,
      apiId: resolveString({ Ref: template.api.logicalId }, context, template.api.logicalId),
      keys: new Map([
        [
          OPERATOR_KEY.accessKeyId,
          {
            secretAccessKey: OPERATOR_KEY.secretAccessKey,
            arn: principals.get(OPERATOR_KEY.accessKeyId)!.arn,
          },
        ],
        ...(options.keys ?? []),
      ]),
      // The operator's key is verified; other keys sign as users unless the caller gave a mapping.
      unknownKeys: options.keys ? "refuse" : "accept-as-user",
      invoke: (event) => apiFunction.invoke(event),
      ...(options.port !== undefined && { port: options.port }),
    });
    stoppers.push(() => apiGateway.stop());
    api.url = apiGateway.url;
    outputs.ApiUrl = apiGateway.url;
    for (const invoker of invokers) invoker.start();
    log(`api: ${apiGateway.url}`);

    return {
      url: apiGateway.url,
      awsEndpoint: gateway.url,
      stackName,
      template,
      outputs,
      gateway,
      principals: [...principals.values()],
      functions,
      eventSources,
      schedules: invokers,
      redis,
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** What Lambda's runtime puts in every function's environment, next to the template's variables. */
function lambdaRuntimeVariables(
  spec: FunctionSpec,
  name: string,
  credentials: { accessKeyId: string; secretAccessKey: string },
): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
    LANG: "en_US.UTF-8",
    TZ: ":UTC",
    LAMBDA_TASK_ROOT: spec.assetDir,
    _HANDLER: spec.handler,
    AWS_EXECUTION_ENV: `AWS_Lambda_${spec.runtime}`,
    AWS_LAMBDA_FUNCTION_NAME: name,
    AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
    AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${name}`,
    AWS_LAMBDA_LOG_STREAM_NAME: `local/[$LATEST]${name}`,
    AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
    AWS_LAMBDA_RUNTIME_API: "127.0.0.1:9001",
    AWS_REGION: REGION,
    AWS_DEFAULT_REGION: REGION,
    AWS_ACCESS_KEY_ID: credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    AWS_SESSION_TOKEN: `${name}-session`,
  };
}
