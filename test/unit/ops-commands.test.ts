import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { stripVTControlCharacters } from "node:util";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CloudWatchClient, DescribeAlarmsCommand, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  SchedulerClient,
  UpdateScheduleCommand,
} from "@aws-sdk/client-scheduler";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { mockClient } from "aws-sdk-client-mock";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { adminRoute, pauseReport } from "../../shared/cli/admin-route.ts";
import {
  awsStatus,
  type OpsClients,
  OpsError,
  setDeploymentPaused,
  setDispatcherState,
  updateInputFor,
} from "../../shared/cli/aws-deployment.ts";
import { main } from "../../shared/cli/program.ts";

const clients: OpsClients = {
  cloudFormation: new CloudFormationClient({ region: "eu-west-1" }),
  scheduler: new SchedulerClient({ region: "eu-west-1" }),
  sqs: new SQSClient({ region: "eu-west-1" }),
  cloudWatch: new CloudWatchClient({ region: "eu-west-1" }),
  // The real route client, signing for real, against the local stand-in of the API below.
  admin: (url, region) => adminRoute(url, { sigv4Region: region, retries: 0 }),
};
// The classes, not the instances: the CLI, run in process below, builds clients of its own.
const cfn = mockClient(CloudFormationClient);
const scheduler = mockClient(SchedulerClient);
const sqs = mockClient(SQSClient);
const cloudWatch = mockClient(CloudWatchClient);

/**
 * The deployment's admin routes, as the API function answers them behind API Gateway's `api`
 * stage: a Redis pause key (here, a field), or 403 for a caller who is not an admin. Every request
 * it sees, and every schedule update the mock sees, goes into `log`, in order.
 */
const api = {
  server: undefined as Server | undefined,
  url: "",
  forbidden: false,
  pausedSince: undefined as string | undefined,
  requests: [] as { method: string; path: string; authorization: string }[],
};
const log: string[] = [];

function answer(request: IncomingMessage, respond: (status: number, body: object) => void) {
  api.requests.push({
    method: request.method ?? "",
    path: request.url ?? "",
    authorization: String(request.headers.authorization ?? ""),
  });
  if (api.forbidden) {
    respond(403, {
      type: "about:blank",
      title: "Admin routes are for the deployment's admins",
      status: 403,
      detail: "the caller is not among the principals the Hourglass construct names as admins",
    });
    return;
  }
  const action = /^\/api\/v1\/admin\/(status|pause|resume)$/.exec(request.url ?? "")?.[1];
  if (!action) return respond(404, { title: "not found" });
  if (action !== "status") log.push(`admin:${action}`);
  if (action === "pause") api.pausedSince ??= "2026-12-01T09:30:00.000Z";
  if (action === "resume") api.pausedSince = undefined;
  respond(200, {
    paused: api.pausedSince !== undefined,
    ...(api.pausedSince && { pausedSince: api.pausedSince }),
    indexSize: 1_234,
    oldestOverdueMs: 250,
  });
}

beforeAll(async () => {
  api.server = createServer((request, response) =>
    answer(request, (status, body) => {
      response.writeHead(status, { "content-type": "application/json" });
      response.end(JSON.stringify(body));
    }),
  );
  await new Promise<void>((resolve) => api.server!.listen(0, "127.0.0.1", resolve));
  api.url = `http://127.0.0.1:${(api.server!.address() as AddressInfo).port}/api/`;
});
afterAll(() => api.server?.close());

const QUEUE = "https://sqs.eu-west-1.amazonaws.com/111111111111/Hourglass-WorkQueue";
const DLQ = "https://sqs.eu-west-1.amazonaws.com/111111111111/Hourglass-WorkDlq";

/** Every field GetSchedule can return, each set, so a field dropped on update shows. */
const schedule: GetScheduleCommandOutput = {
  $metadata: {},
  Arn: "arn:aws:scheduler:eu-west-1:111111111111:schedule/ops/Hourglass-Dispatch",
  Name: "Hourglass-Dispatch",
  GroupName: "ops",
  State: "ENABLED",
  Description: "Hourglass dispatcher",
  ScheduleExpression: "rate(1 minute)",
  ScheduleExpressionTimezone: "Europe/Paris",
  StartDate: new Date("2026-01-01T00:00:00Z"),
  EndDate: new Date("2030-01-01T00:00:00Z"),
  CreationDate: new Date("2026-01-01T00:00:00Z"),
  LastModificationDate: new Date("2026-11-30T12:00:00Z"),
  KmsKeyArn: "arn:aws:kms:eu-west-1:111111111111:key/abc",
  ActionAfterCompletion: "NONE",
  FlexibleTimeWindow: { Mode: "OFF" },
  Target: {
    Arn: "arn:aws:lambda:eu-west-1:111111111111:function:Hourglass-Dispatcher",
    RoleArn: "arn:aws:iam::111111111111:role/Hourglass-SchedulerRole",
    Input: '{"source":"schedule"}',
    RetryPolicy: { MaximumEventAgeInSeconds: 60, MaximumRetryAttempts: 2 },
    DeadLetterConfig: { Arn: "arn:aws:sqs:eu-west-1:111111111111:Hourglass-ScheduleDlq" },
  },
};

/** The stack's outputs, as `cdk deploy` leaves them (ApiUrl: the stand-in above). */
const described = () => ({
  Stacks: [
    {
      StackName: "Hourglass",
      CreationTime: new Date(),
      StackStatus: "UPDATE_COMPLETE" as const,
      Outputs: [
        { OutputKey: "DispatchSchedule", OutputValue: "Hourglass-Dispatch" },
        { OutputKey: "DispatchScheduleGroup", OutputValue: "ops" },
        { OutputKey: "WorkQueueUrl", OutputValue: QUEUE },
        { OutputKey: "DeadLetterQueueUrl", OutputValue: DLQ },
        { OutputKey: "AlarmNames", OutputValue: "Hourglass-WorkDlqDepth,Hourglass-OverdueLag" },
        { OutputKey: "ApiUrl", OutputValue: api.url },
      ],
    },
  ],
});

beforeEach(() => {
  vi.stubEnv("AWS_ACCESS_KEY_ID", "AKIDOPERATOR");
  vi.stubEnv("AWS_SECRET_ACCESS_KEY", "operator-secret");
  vi.stubEnv("AWS_SESSION_TOKEN", undefined);
  api.forbidden = false;
  api.pausedSince = undefined;
  api.requests = [];
  log.length = 0;
  for (const mock of [cfn, scheduler, sqs, cloudWatch]) mock.reset();
  cfn.on(DescribeStacksCommand).resolves(described());
  scheduler.on(GetScheduleCommand).resolves(schedule);
  scheduler.on(UpdateScheduleCommand).callsFake((input: { State: string }) => {
    log.push(`schedule:${input.State}`);
    return { ScheduleArn: schedule.Arn! };
  });
});
afterEach(() => {
  vi.unstubAllEnvs();
});

describe("hourglass pause|resume --aws", () => {
  it("disables the schedule with UpdateSchedule carrying every field of the existing schedule", async () => {
    const result = await setDispatcherState(clients, "Hourglass", "DISABLED");
    expect(result).toEqual({
      stack: "Hourglass",
      schedule: "ops/Hourglass-Dispatch",
      before: "ENABLED",
      after: "DISABLED",
    });
    expect(scheduler.commandCalls(GetScheduleCommand)[0]!.args[0].input).toEqual({
      Name: "Hourglass-Dispatch",
      GroupName: "ops",
    });
    const updates = scheduler.commandCalls(UpdateScheduleCommand);
    expect(updates).toHaveLength(1);
    const { $metadata, Arn, CreationDate, LastModificationDate, State, ...carried } = schedule;
    expect(updates[0]!.args[0].input).toEqual({ ...carried, State: "DISABLED" });
  });

  it("carries every updatable field: nothing GetSchedule returns is lost but what UpdateSchedule does not take", () => {
    const input = updateInputFor(schedule, "ENABLED");
    const returned = Object.keys(schedule).filter(
      (k) => !["$metadata", "Arn", "CreationDate", "LastModificationDate"].includes(k),
    );
    expect(Object.keys(input).sort()).toEqual(returned.sort());
  });

  it("enables it again, and does nothing when it is already in the asked state", async () => {
    scheduler.on(GetScheduleCommand).resolves({ ...schedule, State: "DISABLED" });
    await setDispatcherState(clients, "Hourglass", "ENABLED");
    expect(scheduler.commandCalls(UpdateScheduleCommand)[0]!.args[0].input.State).toBe("ENABLED");
    scheduler.resetHistory();
    scheduler.on(GetScheduleCommand).resolves(schedule);
    const noop = await setDispatcherState(clients, "Hourglass", "ENABLED");
    expect(noop.before).toBe("ENABLED");
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(0);
  });

  it("refuses to overwrite a schedule it could not read whole", () => {
    const { Target, ...partial } = schedule;
    expect(() => updateInputFor(partial, "DISABLED")).toThrow(OpsError);
  });

  it("says what is wrong with a stack that lacks the outputs", async () => {
    cfn.on(DescribeStacksCommand).resolves({
      Stacks: [{ StackName: "Old", CreationTime: new Date(), StackStatus: "CREATE_COMPLETE", Outputs: [] }],
    });
    await expect(setDispatcherState(clients, "Old", "DISABLED")).rejects.toThrow(
      /no DispatchSchedule output/,
    );
  });
});

describe("hourglass status --aws", () => {
  it("reads the schedule, both queues' depths, the alarms in ALARM and the oldest overdue lag", async () => {
    sqs.on(GetQueueAttributesCommand, { QueueUrl: QUEUE }).resolves({
      Attributes: {
        ApproximateNumberOfMessages: "12",
        ApproximateNumberOfMessagesNotVisible: "3",
        ApproximateNumberOfMessagesDelayed: "40",
      },
    });
    sqs.on(GetQueueAttributesCommand, { QueueUrl: DLQ }).resolves({
      Attributes: { ApproximateNumberOfMessages: "2" },
    });
    cloudWatch
      .on(DescribeAlarmsCommand)
      .resolves({ MetricAlarms: [{ AlarmName: "Hourglass-WorkDlqDepth" }] });
    cloudWatch.on(GetMetricDataCommand).resolves({
      MetricDataResults: [{ Id: "overdue", Values: [1_500, 900], Timestamps: [new Date(), new Date()] }],
    });
    const status = await awsStatus(clients, "Hourglass", new Date("2026-12-01T00:00:00Z"));
    expect(status).toEqual({
      stack: "Hourglass",
      dispatcher: {
        schedule: "ops/Hourglass-Dispatch",
        state: "ENABLED",
        expression: "rate(1 minute)",
        lastModified: "2026-11-30T12:00:00.000Z",
      },
      queue: { visible: 12, inFlight: 3, delayed: 40 },
      deadLetterQueue: { visible: 2, inFlight: 0, delayed: 0 },
      alarmsInAlarm: ["Hourglass-WorkDlqDepth"],
      oldestOverdueMs: 1_500,
      admin: { reachable: true, paused: false, indexSize: 1_234, oldestOverdueMs: 250 },
    });
    expect(cloudWatch.commandCalls(DescribeAlarmsCommand)[0]!.args[0].input).toEqual({
      AlarmNames: ["Hourglass-WorkDlqDepth", "Hourglass-OverdueLag"],
      StateValue: "ALARM",
    });
    const query = cloudWatch.commandCalls(GetMetricDataCommand)[0]!.args[0].input;
    expect(query.MetricDataQueries?.[0]?.MetricStat?.Metric).toEqual({
      Namespace: "Hourglass",
      MetricName: "OldestOverdueMs",
      Dimensions: [{ Name: "service", Value: "dispatcher" }],
    });
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(0);
  });
});

/** The SigV4 header a request to API Gateway (IAM authorization) carries from these credentials. */
const SIGNED =
  /^AWS4-HMAC-SHA256 Credential=AKIDOPERATOR\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$/;

describe("hourglass pause|resume --aws: the Redis pause key and the schedule", () => {
  it("pauses every path: the pause key through the admin route (SigV4) first, then the schedule", async () => {
    const result = await setDeploymentPaused(clients, "Hourglass", true);
    expect(log).toEqual(["admin:pause", "schedule:DISABLED"]);
    expect(api.requests).toEqual([
      { method: "POST", path: "/api/v1/admin/pause", authorization: expect.stringMatching(SIGNED) },
    ]);
    expect(result).toMatchObject({
      complete: true,
      pauseKey: { ok: true, result: { paused: true, pausedSince: "2026-12-01T09:30:00.000Z" } },
      schedule: {
        ok: true,
        result: { schedule: "ops/Hourglass-Dispatch", before: "ENABLED", after: "DISABLED" },
      },
    });
    expect(pauseReport(result)).toBe(
      "dispatch paused on every path: Redis pause key set (since 2026-12-01T09:30:00.000Z); ops/Hourglass-Dispatch: ENABLED → DISABLED",
    );
  });

  it("resumes the schedule first, then clears the pause key, so every path starts together", async () => {
    api.pausedSince = "2026-12-01T09:30:00.000Z";
    scheduler.on(GetScheduleCommand).resolves({ ...schedule, State: "DISABLED" });
    const result = await setDeploymentPaused(clients, "Hourglass", false);
    expect(log).toEqual(["schedule:ENABLED", "admin:resume"]);
    expect(result.complete).toBe(true);
    expect(api.pausedSince).toBeUndefined();
  });

  it("says which half took effect when the caller is not an admin (403): the schedule is disabled, the key is not set", async () => {
    api.forbidden = true;
    const result = await setDeploymentPaused(clients, "Hourglass", true);
    expect(log).toEqual(["schedule:DISABLED"]);
    expect(result.complete).toBe(false);
    expect(result.pauseKey).toMatchObject({ ok: false, attempted: true, forbidden: true });
    expect(result.schedule.ok).toBe(true);
    const report = pauseReport(result);
    expect(report).toMatch(
      /^PARTLY PAUSED: ops\/Hourglass-Dispatch: ENABLED → DISABLED, but the Redis pause key is NOT set/,
    );
    expect(report).toContain("answered 403");
    expect(report).toContain("direct sends from the API and the worker's own retries still run");
    expect(report).toContain("not one of the deployment's admins");
  });

  it("leaves the pause key set when the schedule cannot be enabled, and says nothing resumed", async () => {
    api.pausedSince = "2026-12-01T09:30:00.000Z";
    scheduler.on(GetScheduleCommand).resolves({ ...schedule, State: "DISABLED" });
    scheduler.on(UpdateScheduleCommand).rejects(
      Object.assign(new Error("User is not authorized to perform: scheduler:UpdateSchedule"), {
        name: "AccessDeniedException",
        $metadata: { httpStatusCode: 403 },
      }),
    );
    const result = await setDeploymentPaused(clients, "Hourglass", false);
    expect(api.requests).toEqual([]);
    expect(result.pauseKey).toMatchObject({ ok: false, attempted: false });
    expect(pauseReport(result)).toMatch(
      /^NOT RESUMED: the schedule could not be enabled \(User is not authorized/,
    );
  });

  it("says the key is still set when the schedule was enabled but the admin route refused", async () => {
    api.pausedSince = "2026-12-01T09:30:00.000Z";
    api.forbidden = true;
    scheduler.on(GetScheduleCommand).resolves({ ...schedule, State: "DISABLED" });
    const result = await setDeploymentPaused(clients, "Hourglass", false);
    expect(log).toEqual(["schedule:ENABLED"]);
    expect(pauseReport(result)).toMatch(
      /^NOT RESUMED: ops\/Hourglass-Dispatch: DISABLED → ENABLED, but the Redis pause key is still set \(POST \/v1\/admin\/resume answered 403/,
    );
  });
});

describe("hourglass status --aws: the pause key beside the schedule", () => {
  beforeEach(() => {
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: {} });
    cloudWatch.on(DescribeAlarmsCommand).resolves({ MetricAlarms: [] });
    cloudWatch.on(GetMetricDataCommand).resolves({ MetricDataResults: [] });
  });

  it("reads the pause key, its time, the index size and the oldest overdue through the admin route", async () => {
    api.pausedSince = "2026-12-01T09:30:00.000Z";
    const status = await awsStatus(clients, "Hourglass");
    expect(status.admin).toEqual({
      reachable: true,
      paused: true,
      pausedSince: "2026-12-01T09:30:00.000Z",
      indexSize: 1_234,
      oldestOverdueMs: 250,
    });
    expect(api.requests).toEqual([
      { method: "GET", path: "/api/v1/admin/status", authorization: expect.stringMatching(SIGNED) },
    ]);
  });

  it("answers for a caller who is not an admin, saying so, instead of failing", async () => {
    api.forbidden = true;
    const status = await awsStatus(clients, "Hourglass");
    expect(status.dispatcher.state).toBe("ENABLED");
    expect(status.admin).toMatchObject({ reachable: false, forbidden: true });
    expect(status.admin.reachable === false && status.admin.reason).toContain("answered 403");
  });
});

describe("the CLI, in process", () => {
  let stdout = "";
  let stderr = "";
  beforeEach(() => {
    sqs.on(GetQueueAttributesCommand).resolves({ Attributes: {} });
    cloudWatch.on(DescribeAlarmsCommand).resolves({ MetricAlarms: [] });
    cloudWatch.on(GetMetricDataCommand).resolves({ MetricDataResults: [] });
    stdout = "";
    stderr = "";
    vi.spyOn(process.stdout, "write").mockImplementation((chunk) => {
      stdout += stripVTControlCharacters(String(chunk));
      return true;
    });
    vi.spyOn(process.stderr, "write").mockImplementation((chunk) => {
      stderr += stripVTControlCharacters(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });
  const cli = (...args: string[]) => main(["node", "hourglass", "--region", "eu-west-1", ...args]);

  it("pause --aws exits 1 and says on stderr which half took effect when the admin route answers 403", async () => {
    api.forbidden = true;
    await cli("pause", "--aws");
    expect(process.exitCode).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toMatch(
      /^hourglass: PARTLY PAUSED: ops\/Hourglass-Dispatch: ENABLED → DISABLED, but the Redis pause key is NOT set/,
    );
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(1);
  });

  it("status --aws shows the pause key next to the schedule, and a 403 as such", async () => {
    api.pausedSince = "2026-12-01T09:30:00.000Z";
    await cli("status", "--aws");
    expect(process.exitCode).toBeUndefined();
    expect(stdout).toContain("ENABLED (rate(1 minute)) ops/Hourglass-Dispatch");
    expect(stdout).toMatch(/pause key\s*│\s*PAUSED since 2026-12-01T09:30:00.000Z/);
    expect(stdout).toMatch(/index size\s*│\s*1234/);
    stdout = "";
    api.forbidden = true;
    await cli("status", "--aws");
    expect(process.exitCode).toBeUndefined();
    expect(stdout).toMatch(/pause key\s*│\s*unknown: GET \/v1\/admin\/status answered 403/);
    expect(stdout).toContain("not one of the deployment's admins");
  });
});
