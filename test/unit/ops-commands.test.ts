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
import { beforeEach, describe, expect, it } from "vitest";
import {
  awsStatus,
  type OpsClients,
  OpsError,
  setDispatcherState,
  updateInputFor,
} from "../../shared/cli/ops-commands.ts";

const clients: OpsClients = {
  cloudFormation: new CloudFormationClient({ region: "eu-west-1" }),
  scheduler: new SchedulerClient({ region: "eu-west-1" }),
  sqs: new SQSClient({ region: "eu-west-1" }),
  cloudWatch: new CloudWatchClient({ region: "eu-west-1" }),
};
const cfn = mockClient(clients.cloudFormation);
const scheduler = mockClient(clients.scheduler);
const sqs = mockClient(clients.sqs);
const cloudWatch = mockClient(clients.cloudWatch);

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

beforeEach(() => {
  for (const mock of [cfn, scheduler, sqs, cloudWatch]) mock.reset();
  cfn.on(DescribeStacksCommand).resolves({
    Stacks: [
      {
        StackName: "Hourglass",
        CreationTime: new Date(),
        StackStatus: "UPDATE_COMPLETE",
        Outputs: [
          { OutputKey: "DispatchSchedule", OutputValue: "Hourglass-Dispatch" },
          { OutputKey: "DispatchScheduleGroup", OutputValue: "ops" },
          { OutputKey: "WorkQueueUrl", OutputValue: QUEUE },
          { OutputKey: "DeadLetterQueueUrl", OutputValue: DLQ },
          { OutputKey: "AlarmNames", OutputValue: "Hourglass-WorkDlqDepth,Hourglass-OverdueLag" },
        ],
      },
    ],
  });
  scheduler.on(GetScheduleCommand).resolves(schedule);
  scheduler.on(UpdateScheduleCommand).resolves({ ScheduleArn: schedule.Arn! });
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
