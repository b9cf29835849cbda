import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CloudWatchClient, DescribeAlarmsCommand, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import { EventBridgeClient, ListRulesCommand, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { GetScheduleCommand, SchedulerClient, UpdateScheduleCommand } from "@aws-sdk/client-scheduler";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AwsGateway,
  type GatewayPrincipal,
  startAwsGateway,
} from "../../scripts/aws-shaped/aws-gateway/index.ts";
import { updateInputFor } from "../../shared/cli/aws-deployment.ts";

/**
 * The services the gateway answers itself, through the real SDK clients: each answers what the
 * harness seeded, in the shape the SDK parses, and only for a role that allows the call.
 */
const REGION = "us-east-1";
const ACCOUNT = "000000000000";
const SECRET_ARN = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:HourglassCacheAuth-AbC123`;
const BUS_ARN = `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/hourglass`;
const STACK_ID = `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/Hourglass/6b1c6f80-0000-4000-8000-000000000001`;
const SCHEDULE_ARN = `arn:aws:scheduler:${REGION}:${ACCOUNT}:schedule/hourglass/dispatcher`;
const SCHEDULER_ROLE = `arn:aws:iam::${ACCOUNT}:role/HourglassSchedulerRole`;
const DISPATCHER_ARN = `arn:aws:lambda:${REGION}:${ACCOUNT}:function:HourglassDispatcher`;

function principal(name: string, statements: unknown[]): GatewayPrincipal {
  return {
    name,
    arn: `arn:aws:iam::${ACCOUNT}:role/Hourglass-${name}`,
    policies: [{ name: `${name}-policy`, document: { Version: "2012-10-17", Statement: statements } }],
  };
}

const operator = principal("operator", [
  { Effect: "Allow", Action: "secretsmanager:GetSecretValue", Resource: SECRET_ARN },
  { Effect: "Allow", Action: "events:PutEvents", Resource: BUS_ARN },
  { Effect: "Allow", Action: ["scheduler:GetSchedule", "scheduler:UpdateSchedule"], Resource: SCHEDULE_ARN },
  {
    Effect: "Allow",
    Action: "iam:PassRole",
    Resource: SCHEDULER_ROLE,
    Condition: { StringEquals: { "iam:PassedToService": "scheduler.amazonaws.com" } },
  },
  { Effect: "Allow", Action: "cloudformation:DescribeStacks", Resource: STACK_ID },
  { Effect: "Allow", Action: ["cloudwatch:DescribeAlarms", "cloudwatch:GetMetricData"], Resource: "*" },
  { Effect: "Allow", Action: "lambda:InvokeFunction", Resource: DISPATCHER_ARN },
]);
/** The operator's scheduler rights without iam:PassRole, and nothing else. */
const noPassRole = principal("no-pass-role", [
  { Effect: "Allow", Action: ["scheduler:GetSchedule", "scheduler:UpdateSchedule"], Resource: SCHEDULE_ARN },
]);
const nobody = principal("nobody", []);

let gateway: AwsGateway;
const outputs: Record<string, string> = { DispatcherSchedule: "dispatcher" };
const invoked: { arn: string; payload: string }[] = [];

function client<T>(Client: new (config: object) => T, accessKeyId: string): T {
  return new Client({
    region: REGION,
    endpoint: gateway.url,
    credentials: { accessKeyId, secretAccessKey: "unused" },
    maxAttempts: 1,
  });
}

beforeAll(async () => {
  gateway = await startAwsGateway({
    region: REGION,
    accountId: ACCOUNT,
    dynamoEndpoint: process.env.AWS_ENDPOINT_URL_DYNAMODB ?? "",
    sqsEndpoint: process.env.AWS_ENDPOINT_URL_SQS ?? "",
    principals: new Map([
      ["AKIDOPS", operator],
      ["AKIDNOPASS", noPassRole],
      ["AKIDNOBODY", nobody],
    ]),
    secrets: new Map([[SECRET_ARN, '{"password":"s3cret"}']]),
    stacks: [
      {
        name: "Hourglass",
        stackId: STACK_ID,
        // The harness learns some outputs after the gateway starts (the API's URL), so they are read
        // at each call; a fresh object each time proves nothing is kept from the start.
        get outputs() {
          return { ...outputs };
        },
      },
    ],
    schedules: [
      {
        name: "dispatcher",
        group: "hourglass",
        state: "ENABLED",
        expression: "rate(1 minute)",
        targetArn: DISPATCHER_ARN,
        roleArn: SCHEDULER_ROLE,
      },
    ],
    alarms: ["HourglassDlqNotEmpty", "HourglassOverdue"],
    invokeLambda: async (arn, payload) => {
      invoked.push({ arn, payload: Buffer.from(payload).toString("utf8") });
      return { statusCode: 200, payload: Buffer.from('{"dispatched":3}') };
    },
  });
});

afterAll(async () => {
  await gateway?.stop();
});

describe("Secrets Manager", () => {
  it("returns the seeded SecretString by ARN and by name, and refuses a role without the grant", async () => {
    const secrets = client(SecretsManagerClient, "AKIDOPS");
    const byArn = await secrets.send(new GetSecretValueCommand({ SecretId: SECRET_ARN }));
    expect(byArn).toMatchObject({
      ARN: SECRET_ARN,
      Name: "HourglassCacheAuth",
      SecretString: '{"password":"s3cret"}',
    });
    const byName = await secrets.send(new GetSecretValueCommand({ SecretId: "HourglassCacheAuth" }));
    expect(byName.SecretString).toBe('{"password":"s3cret"}');

    const error = await client(SecretsManagerClient, "AKIDNOBODY")
      .send(new GetSecretValueCommand({ SecretId: SECRET_ARN }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException", $metadata: { httpStatusCode: 400 } });
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({
        principal: "nobody",
        action: "secretsmanager:GetSecretValue",
        resource: SECRET_ARN,
      }),
    );
  });
});

describe("EventBridge", () => {
  it("records each entry PutEvents accepts, against the bus it names", async () => {
    const before = gateway.published().length;
    const put = await client(EventBridgeClient, "AKIDOPS").send(
      new PutEventsCommand({
        Entries: [
          { EventBusName: BUS_ARN, Source: "hourglass", DetailType: "event.failed", Detail: '{"id":"e1"}' },
          {
            EventBusName: "hourglass",
            Source: "hourglass",
            DetailType: "event.failed",
            Detail: '{"id":"e2"}',
          },
        ],
      }),
    );
    expect(put.FailedEntryCount).toBe(0);
    expect(put.Entries?.every((e) => typeof e.EventId === "string")).toBe(true);
    expect(gateway.published().slice(before)).toEqual([
      expect.objectContaining({
        principal: "operator",
        entry: expect.objectContaining({ Detail: '{"id":"e1"}' }),
      }),
      expect.objectContaining({
        principal: "operator",
        entry: expect.objectContaining({ Detail: '{"id":"e2"}' }),
      }),
    ]);
    expect(gateway.calls()).toContainEqual(
      expect.objectContaining({ action: "events:PutEvents", resource: BUS_ARN, decision: "Allowed" }),
    );

    // The default bus is not granted: the whole call is refused and nothing is published.
    const count = gateway.published().length;
    const error = await client(EventBridgeClient, "AKIDOPS")
      .send(new PutEventsCommand({ Entries: [{ Source: "hourglass", DetailType: "x", Detail: "{}" }] }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException" });
    expect((error as Error).message).toContain(
      `on resource: arn:aws:events:${REGION}:${ACCOUNT}:event-bus/default`,
    );
    expect(gateway.published()).toHaveLength(count);
  });

  it("answers an operation it does not serve with a clear 400, recorded as refused", async () => {
    const error = await client(EventBridgeClient, "AKIDOPS")
      .send(new ListRulesCommand({}))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "UnknownOperationException", $metadata: { httpStatusCode: 400 } });
    expect((error as Error).message).toContain("does not serve events ListRules");
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({ operation: "ListRules", refusal: "operation not served" }),
    );
  });
});

describe("EventBridge Scheduler", () => {
  it("answers a path with a malformed escape as the caller's 400, never a 500", async () => {
    const response = await fetch(`${gateway.url}/schedules/%E0%A4?groupName=default`, {
      headers: {
        authorization: `AWS4-HMAC-SHA256 Credential=AKIDOPS/20261205/${REGION}/scheduler/aws4_request, SignedHeaders=host, Signature=0`,
      },
    });
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("malformed percent-encoding");
  });

  it("UpdateSchedule needs iam:PassRole for the target's role, changes the state and tells the listener", async () => {
    const changes: string[] = [];
    gateway.onScheduleChange((group, name, state) => changes.push(`${group}/${name}=${state}`));
    const read = new GetScheduleCommand({ Name: "dispatcher", GroupName: "hourglass" });
    const current = await client(SchedulerClient, "AKIDOPS").send(read);
    expect(current).toMatchObject({
      Arn: SCHEDULE_ARN,
      State: "ENABLED",
      ScheduleExpression: "rate(1 minute)",
      Target: { Arn: DISPATCHER_ARN, RoleArn: SCHEDULER_ROLE },
    });
    // The same request the operator's `pause` command sends.
    const disable = new UpdateScheduleCommand(updateInputFor(current, "DISABLED"));

    const error = await client(SchedulerClient, "AKIDNOPASS")
      .send(disable)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException", $metadata: { httpStatusCode: 403 } });
    expect(gateway.scheduleState("hourglass", "dispatcher")).toBe("ENABLED");
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({
        principal: "no-pass-role",
        action: "iam:PassRole",
        resource: SCHEDULER_ROLE,
        operation: "UpdateSchedule",
      }),
    );

    const updated = await client(SchedulerClient, "AKIDOPS").send(disable);
    expect(updated.ScheduleArn).toBe(SCHEDULE_ARN);
    expect(gateway.scheduleState("hourglass", "dispatcher")).toBe("DISABLED");
    expect(changes).toEqual(["hourglass/dispatcher=DISABLED"]);
    const after = await client(SchedulerClient, "AKIDOPS").send(read);
    expect(after).toMatchObject({ State: "DISABLED", Target: { Arn: DISPATCHER_ARN } });
  });
});

describe("CloudFormation and CloudWatch", () => {
  it("DescribeStacks returns the outputs as they are now, authorized on the stack id ARN", async () => {
    outputs.ApiUrl = "http://127.0.0.1:3000/";
    const described = await client(CloudFormationClient, "AKIDOPS").send(
      new DescribeStacksCommand({ StackName: "Hourglass" }),
    );
    expect(described.Stacks?.[0]).toMatchObject({
      StackName: "Hourglass",
      StackId: STACK_ID,
      Outputs: [
        { OutputKey: "DispatcherSchedule", OutputValue: "dispatcher" },
        { OutputKey: "ApiUrl", OutputValue: "http://127.0.0.1:3000/" },
      ],
    });
    const error = await client(CloudFormationClient, "AKIDNOBODY")
      .send(new DescribeStacksCommand({ StackName: "Hourglass" }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDenied", $metadata: { httpStatusCode: 403 } });
    expect(gateway.denied()).toContainEqual(
      expect.objectContaining({ action: "cloudformation:DescribeStacks", resource: STACK_ID }),
    );
  });

  it("DescribeAlarms lists the seeded alarms in state OK; GetMetricData has no data", async () => {
    const cloudWatch = client(CloudWatchClient, "AKIDOPS");
    const all = await cloudWatch.send(new DescribeAlarmsCommand({ AlarmNames: ["HourglassOverdue"] }));
    expect(all.MetricAlarms?.map((a) => [a.AlarmName, a.StateValue])).toEqual([["HourglassOverdue", "OK"]]);
    const firing = await cloudWatch.send(
      new DescribeAlarmsCommand({
        AlarmNames: ["HourglassDlqNotEmpty", "HourglassOverdue"],
        StateValue: "ALARM",
      }),
    );
    expect(firing.MetricAlarms).toEqual([]);
    const metrics = await cloudWatch.send(
      new GetMetricDataCommand({
        StartTime: new Date(Date.now() - 60_000),
        EndTime: new Date(),
        MetricDataQueries: [
          {
            Id: "overdue",
            MetricStat: { Metric: { Namespace: "Hourglass", MetricName: "x" }, Period: 60, Stat: "Maximum" },
          },
        ],
      }),
    );
    expect(metrics.MetricDataResults).toEqual([expect.objectContaining({ Id: "overdue", Values: [] })]);
    const error = await client(CloudWatchClient, "AKIDNOBODY")
      .send(new DescribeAlarmsCommand({}))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDenied", $metadata: { httpStatusCode: 403 } });
  });
});

describe("Lambda", () => {
  it("Invoke hands the payload to the harness's callback and returns its answer", async () => {
    const answer = await client(LambdaClient, "AKIDOPS").send(
      new InvokeCommand({ FunctionName: "HourglassDispatcher", Payload: Buffer.from('{"tick":1}') }),
    );
    expect(answer.StatusCode).toBe(200);
    expect(Buffer.from(answer.Payload ?? new Uint8Array()).toString("utf8")).toBe('{"dispatched":3}');
    expect(invoked).toEqual([{ arn: DISPATCHER_ARN, payload: '{"tick":1}' }]);

    const error = await client(LambdaClient, "AKIDNOBODY")
      .send(new InvokeCommand({ FunctionName: "HourglassDispatcher" }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AccessDeniedException", $metadata: { httpStatusCode: 403 } });
    expect(invoked).toHaveLength(1);
  });
});
