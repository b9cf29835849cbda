import { fixedResources, type Line, serverlessMinimum } from "./fixed.ts";
import { atRate, type FunctionInfo, functionsOf, ticksPerMonth } from "./functions.ts";
import { type LambdaMeasurement, type Path, PER_TICK, REQUESTS_PER_JOB } from "./measured.ts";
import { ASSUMPTIONS, HOURS_PER_MONTH, PRICES, SECONDS_PER_MONTH, TERMS } from "./prices.ts";
import { type CfnTemplate, prop, resourcesOf } from "./template.ts";

export interface Bill {
  readonly jobs: number;
  readonly path: Path;
  readonly fixed: readonly Line[];
  readonly variable: readonly Line[];
  readonly fixedUsd: number;
  readonly variableUsd: number;
  readonly totalUsd: number;
}

/**
 * The environment variable that names the transitions a deployment publishes to EventBridge
 * (comma-separated). Absent with a bus configured: every transition is published.
 */
export const TRANSITIONS_VARIABLE = "HOURGLASS_EVENT_BUS_TRANSITIONS";

const sum = (lines: readonly Line[]) => lines.reduce((total, l) => total + l.usd, 0);
const GB = 1e9;
const round = (n: number, digits = 3) => Number(n.toFixed(digits));

/** Transitions the deployment publishes to EventBridge, read from its functions' environment. */
export function publishedTransitions(template: CfnTemplate): "all" | readonly string[] {
  const { env } = functionsOf(template).worker;
  if (env.HOURGLASS_EVENT_BUS_NAME === undefined || String(env.HOURGLASS_NOTIFICATIONS) === "false")
    return [];
  const named = env[TRANSITIONS_VARIABLE];
  if (named === undefined) return "all";
  return String(named)
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
}

function lambdaUsd(fn: FunctionInfo, invocations: number, msPerInvocation: number): number {
  const gbSeconds = invocations * (Math.ceil(msPerInvocation) / 1000) * (fn.memoryMb / 1024);
  const perGbSecond = fn.arm ? PRICES.lambdaArmGbSecond.usd : PRICES.lambdaX86GbSecond.usd;
  return invocations * PRICES.lambdaRequest.usd + gbSeconds * perGbSecond;
}

/** Traces active tracing records under X-Ray's default rule: the first request each second, then 5% of the rest. */
export function tracesRecorded(invocations: number): number {
  const perSecond = invocations / SECONDS_PER_MONTH;
  const sampled = Math.min(perSecond, 1) + ASSUMPTIONS.xraySampledShare * Math.max(perSecond - 1, 0);
  return sampled * SECONDS_PER_MONTH;
}

function hasPitr(template: CfnTemplate): boolean {
  const tables = [
    ...resourcesOf(template, "AWS::DynamoDB::GlobalTable"),
    ...resourcesOf(template, "AWS::DynamoDB::Table"),
  ];
  return tables.some((t) => {
    const own = prop<{ PointInTimeRecoveryEnabled?: boolean }>(t, "PointInTimeRecoverySpecification");
    const replicas = prop<{ PointInTimeRecoverySpecification?: { PointInTimeRecoveryEnabled?: boolean } }[]>(
      t,
      "Replicas",
    );
    return (
      own?.PointInTimeRecoveryEnabled === true ||
      (replicas ?? []).some((r) => r.PointInTimeRecoverySpecification?.PointInTimeRecoveryEnabled)
    );
  });
}

/** Costs that come with the dispatcher's schedule: a tick's invocation, its leases and queries. */
function tickLines(template: CfnTemplate, measurement: LambdaMeasurement): Line[] {
  const ticks = ticksPerMonth(template, SECONDS_PER_MONTH);
  const { dispatcher } = functionsOf(template);
  const ms = atRate(measurement, 0, (r) => r.dispatcher.msPerInvocation);
  const lines: Line[] = [
    {
      item: "dispatcher Lambda",
      detail: `${Math.round(ticks).toLocaleString("en-US")} ticks × ${Math.round(ms)} ms at ${dispatcher.memoryMb} MB (measured)`,
      usd: lambdaUsd(dispatcher, ticks, ms),
    },
    {
      item: "dispatcher leases and recovery queries",
      detail: `${PER_TICK.wru} WRU + ${PER_TICK.rru} RRU a tick`,
      usd: ticks * (PER_TICK.wru * PRICES.dynamoWriteUnit.usd + PER_TICK.rru * PRICES.dynamoReadUnit.usd),
    },
    {
      item: "dispatcher schedule",
      detail: `EventBridge Scheduler, ${Math.round(ticks).toLocaleString("en-US")} invocations (first 14M a month free)`,
      usd: Math.max(0, ticks - TERMS.schedulerFreeInvocations.usd) * PRICES.schedulerInvocation.usd,
    },
  ];
  if (dispatcher.traced)
    lines.push({
      item: "dispatcher traces",
      detail: "X-Ray, every tick",
      usd: tracesRecorded(ticks) * PRICES.xrayTrace.usd,
    });
  return lines;
}

/** Everything a template costs before its first job. */
export function fixedCost(template: CfnTemplate, measurement: LambdaMeasurement): Line[] {
  return [...fixedResources(template), ...tickLines(template, measurement)];
}

function variableLines(
  template: CfnTemplate,
  measurement: LambdaMeasurement,
  path: Path,
  jobs: number,
): Line[] {
  const per = REQUESTS_PER_JOB[path];
  const fns = functionsOf(template);
  const rate = jobs / SECONDS_PER_MONTH;
  const lines: Line[] = [];
  const add = (item: string, detail: string, usd: number) => lines.push({ item, detail, usd });

  add("DynamoDB writes", `${per.wru} WRU a job`, jobs * per.wru * PRICES.dynamoWriteUnit.usd);
  add("DynamoDB reads", `${per.rru} RRU a job`, jobs * per.rru * PRICES.dynamoReadUnit.usd);
  const storedGb = (jobs * ASSUMPTIONS.journalBytesPerJob * (ASSUMPTIONS.journalDaysRetained / 30)) / GB;
  add("DynamoDB storage", `${round(storedGb, 2)} GB`, storedGb * PRICES.dynamoStorageGbMonth.usd);
  if (hasPitr(template))
    add(
      "DynamoDB point-in-time recovery",
      `${round(storedGb, 2)} GB`,
      storedGb * PRICES.dynamoPitrGbMonth.usd,
    );

  const workerPerAttempt = atRate(measurement, rate, (r) => r.worker.invocationsPerJob);
  const workerMs = atRate(measurement, rate, (r) => r.worker.msPerInvocation);
  const workerInvocations = jobs * per.attempts * workerPerAttempt;
  // Each worker invocation is one receive that returned messages and one delete of the batch.
  const sqsPerJob = per.sqsSends + 2 * per.attempts * workerPerAttempt;
  add("SQS requests", `${round(sqsPerJob)} a job`, jobs * sqsPerJob * PRICES.sqsRequest.usd);
  add(
    "worker Lambda",
    `${round(per.attempts * workerPerAttempt)} invocations a job × ${Math.round(workerMs)} ms (measured at ${round(rate, 2)} jobs/s)`,
    lambdaUsd(fns.worker, workerInvocations, workerMs),
  );

  const requests = jobs * per.apiRequests;
  const rest = resourcesOf(template, "AWS::ApiGateway::RestApi").length > 0;
  const perRequest = rest ? PRICES.restApiRequest.usd : PRICES.httpApiRequest.usd;
  add(
    `API Gateway (${rest ? "REST" : "HTTP"} API)`,
    `${round(per.apiRequests, 4)} requests a job`,
    requests * perRequest,
  );
  const apiMsPerJob =
    path === "batch"
      ? atRate(measurement, Number.POSITIVE_INFINITY, (r) => r.api.msPerInvocation / r.api.jobsPerRequest)
      : atRate(measurement, 0, (r) => r.api.msPerInvocation);
  const apiMs = path === "batch" ? apiMsPerJob * ASSUMPTIONS.batchSize : apiMsPerJob;
  add("API Lambda", `${Math.round(apiMs)} ms a request (measured)`, lambdaUsd(fns.api, requests, apiMs));

  const published = publishedTransitions(template);
  const entries = per.transitions.filter((t) => published === "all" || published.includes(t)).length;
  if (entries > 0)
    add(
      "EventBridge notifications",
      `${entries} entries a job`,
      jobs * entries * PRICES.eventBridgeEvent.usd,
    );

  const logBytes = path === "batch" ? ASSUMPTIONS.logBytesPerJob.batch : ASSUMPTIONS.logBytesPerJob.single;
  add(
    "CloudWatch Logs ingestion",
    `${logBytes} bytes a job`,
    ((jobs * logBytes) / GB) * PRICES.logIngestionGb.usd,
  );

  // The default sampling rule's reservoir (one a second) is the account's, shared by the functions.
  const tracedInvocations = (fns.api.traced ? requests : 0) + (fns.worker.traced ? workerInvocations : 0);
  const traces = tracesRecorded(tracedInvocations);
  if (traces > 0)
    add(
      "X-Ray traces",
      `${Math.round(traces).toLocaleString("en-US")} recorded`,
      traces * PRICES.xrayTrace.usd,
    );

  for (const cache of resourcesOf(template, "AWS::ElastiCache::ServerlessCache")) {
    const horizon = Number(fns.worker.env.HOURGLASS_INDEX_HORIZON_SECONDS ?? 3600);
    const dataGb = (rate * horizon * ASSUMPTIONS.redisBytesPerPendingEvent) / GB;
    const { gb, gbHour } = serverlessMinimum(cache);
    add(
      "serverless cache data above the minimum",
      `${round(dataGb * 1000, 1)} MB within the ${horizon} s index horizon`,
      Math.max(0, dataGb - gb) * gbHour * HOURS_PER_MONTH,
    );
    const valkey = String(prop(cache, "Engine")) === "valkey";
    const ecpu = valkey ? PRICES.serverlessValkeyEcpu.usd : PRICES.serverlessRedisEcpu.usd;
    add("serverless cache ECPUs", `${ASSUMPTIONS.ecpusPerJob} a job`, jobs * ASSUMPTIONS.ecpusPerJob * ecpu);
  }
  return lines;
}

export function bill(template: CfnTemplate, measurement: LambdaMeasurement, path: Path, jobs: number): Bill {
  const fixed = fixedCost(template, measurement);
  const variable = variableLines(template, measurement, path, jobs);
  const fixedUsd = sum(fixed);
  const variableUsd = sum(variable);
  return { jobs, path, fixed, variable, fixedUsd, variableUsd, totalUsd: fixedUsd + variableUsd };
}

/** QStash pay as you go: every message delivered (a retry is another message). */
export const qstashUsd = (jobs: number) => jobs * PRICES.qstashMessage.usd;

/** EventBridge Scheduler with one one-time schedule a job, invoking a small Lambda that sends it. */
export function schedulerUsd(jobs: number): number {
  const invocations = Math.max(0, jobs - TERMS.schedulerFreeInvocations.usd) * PRICES.schedulerInvocation.usd;
  const gbSeconds = jobs * (ASSUMPTIONS.senderMs / 1000) * (ASSUMPTIONS.senderMemoryMb / 1024);
  return invocations + jobs * PRICES.lambdaRequest.usd + gbSeconds * PRICES.lambdaArmGbSecond.usd;
}
