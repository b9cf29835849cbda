import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  ListSchedulesCommand,
  SchedulerClient,
  UpdateScheduleCommand,
} from "@aws-sdk/client-scheduler";
import { mockClient } from "aws-sdk-client-mock";
import { beforeEach, describe, expect, it } from "vitest";
import { disabledCopy, importFromEventBridge } from "../../shared/cli/eventbridge-import.ts";
import { HourglassApiError, type HourglassClient, type ScheduleBody } from "../../shared/client/client.ts";
import { DISPATCH_SCHEDULE_DESCRIPTION, mapSchedule } from "../../shared/schedules/eventbridge.ts";

const lambdaArn = "arn:aws:lambda:eu-west-1:123456789012:function:Billing_Run";

function source(expression: string, extra: Partial<GetScheduleCommandOutput> = {}): GetScheduleCommandOutput {
  return {
    $metadata: {},
    Name: "nightly",
    GroupName: "default",
    ScheduleExpression: expression,
    State: "ENABLED",
    FlexibleTimeWindow: { Mode: "OFF" },
    Target: {
      Arn: lambdaArn,
      RoleArn: "arn:aws:iam::123456789012:role/scheduler",
      Input: '{"report":"daily"}',
    },
    ...extra,
  };
}

/** Expressions from the EventBridge Scheduler documentation and the Hourglass schedule each maps to. */
describe("EventBridge → Hourglass mapping", () => {
  it.each([
    ["cron(0 10 * * ? *)", "0 0 10 * * ?"],
    ["cron(15 12 * * ? *)", "0 15 12 * * ?"],
    ["cron(0 18 ? * MON-FRI *)", "0 0 18 ? * MON-FRI"],
    ["cron(0 8 1 * ? *)", "0 0 8 1 * ?"],
    ["cron(0/15 * * * ? *)", "0 0-59/15 * * * ?"],
    ["cron(0/10 * ? * MON-FRI *)", "0 0-59/10 * ? * MON-FRI"],
    ["cron(0/5 8-17 ? * MON-FRI *)", "0 0-59/5 8-17 ? * MON-FRI"],
    ["cron(0 9 ? * 2#1 *)", "0 0 9 ? * 1#1"], // first Monday: EventBridge counts days from 1 = Sunday
    ["cron(30 9 ? * 1,7 *)", "0 30 9 ? * 0,6"],
    ["cron(0 0 ? * 6L *)", "0 0 0 ? * 5L"], // last Friday
    ["cron(0 0 L * ? *)", "0 0 0 L * ?"],
    ["cron(0 12 15W * ? *)", "0 0 12 15W * ?"],
  ])("%s → cron %s, unchanged", (expression, cron) => {
    const mapped = mapSchedule(source(expression));
    expect(mapped).toMatchObject({ outcome: "mapped", input: { cron, timezone: "UTC" } });
  });

  it.each([
    ["rate(5 minutes)", "5 minutes"],
    ["rate(1 hour)", "1 hour"],
    ["rate(7 days)", "7 days"],
  ])("%s → rate %s", (expression, rate) => {
    expect(mapSchedule(source(expression))).toMatchObject({ outcome: "mapped", input: { rate } });
  });

  it("carries the zone, dates, payload, retries and state; the Lambda function names the event type", () => {
    const mapped = mapSchedule(
      source("cron(30 2 * * ? *)", {
        ScheduleExpressionTimezone: "Europe/Berlin",
        StartDate: new Date("2027-01-01T00:00:00Z"),
        EndDate: new Date("2028-01-01T00:00:00Z"),
        State: "DISABLED",
        Target: {
          Arn: lambdaArn,
          RoleArn: "r",
          Input: '{"report":"daily"}',
          RetryPolicy: { MaximumRetryAttempts: 4 },
        },
      }),
    );
    expect(mapped).toEqual({
      outcome: "mapped",
      notes: [],
      input: {
        id: "nightly",
        cron: "0 30 2 * * ?",
        timezone: "Europe/Berlin",
        startAt: "2027-01-01T00:00:00.000Z",
        endAt: "2028-01-01T00:00:00.000Z",
        event: { type: "lambda.billing_run", payload: { report: "daily" }, maxAttempts: 5 },
        jitterSeconds: 0,
        catchUp: "none",
        paused: true,
      },
    });
    expect(mapSchedule(source("rate(1 hour)"), { typeFor: { Billing_Run: "billing.run" } })).toMatchObject({
      input: { event: { type: "billing.run" } },
    });
    expect(mapSchedule(source("rate(1 hour)", { GroupName: "team-a" }))).toMatchObject({
      input: { id: "team-a:nightly" },
    });
  });

  it.each([
    [
      "cron(0 12 * * ? 2027)",
      { cron: "0 0 12 * * ?", startAt: "2027-01-01T00:00:00.000Z", endAt: "2028-01-01T00:00:00.000Z" },
      /year 2027/,
    ],
    [
      "at(2027-03-28T02:30:00)",
      { cron: "0 30 2 28 3 *", startAt: "2027-03-28T01:00:00.000Z", endAt: "2027-03-28T01:00:01.000Z" },
      /one-time/,
    ],
  ])("%s maps with a change (Europe/Berlin)", (expression, input, note) => {
    const mapped = mapSchedule(source(expression, { ScheduleExpressionTimezone: "Europe/Berlin" }));
    expect(mapped).toMatchObject({ outcome: "changed", input });
    expect(mapped.notes.some((n) => note.test(n))).toBe(true);
  });

  it("turns a flexible window into jitter and notes what has no equivalent", () => {
    const mapped = mapSchedule(
      source("rate(1 hour)", {
        FlexibleTimeWindow: { Mode: "FLEXIBLE", MaximumWindowInMinutes: 15 },
        Target: {
          Arn: lambdaArn,
          RoleArn: "r",
          RetryPolicy: { MaximumRetryAttempts: 185, MaximumEventAgeInSeconds: 600 },
        },
      }),
    );
    expect(mapped).toMatchObject({
      outcome: "changed",
      input: { jitterSeconds: 900, event: { maxAttempts: 100, payload: null } },
    });
    expect(mapped.notes).toHaveLength(3);
  });

  it.each([
    [
      "an SQS target",
      source("rate(1 hour)", { Target: { Arn: "arn:aws:sqs:eu-west-1:123456789012:jobs", RoleArn: "r" } }),
      /not a Lambda/,
    ],
    [
      "a universal (aws-sdk) target",
      source("rate(1 hour)", {
        Target: { Arn: "arn:aws:scheduler:::aws-sdk:sqs:sendMessage", RoleArn: "r" },
      }),
      /not a Lambda/,
    ],
    ["a list of years", source("cron(0 12 * * ? 2027,2029)"), /year field/],
    ["a year step", source("cron(0 12 * * ? 2027/2)"), /year field/],
    ["an expression croner refuses", source("cron(0 25 * * ? *)"), /cron\(/],
    ["an unknown expression", source("every(5 minutes)"), /not cron/],
  ])("refuses %s", (_, schedule, reason) => {
    const mapped = mapSchedule(schedule);
    expect(mapped.outcome).toBe("refused");
    expect(mapped.notes.some((n) => reason.test(n))).toBe(true);
  });
});

describe("importFromEventBridge", () => {
  const scheduler = mockClient(SchedulerClient);
  const sources: Record<string, GetScheduleCommandOutput> = {
    "default/nightly": source("cron(30 2 * * ? *)"),
    "default/hourly": {
      ...source("rate(1 hour)"),
      Name: "hourly",
      Description: "keep me",
      KmsKeyArn: "arn:aws:kms:k",
      ActionAfterCompletion: "NONE",
    },
    "default/to-sqs": {
      ...source("rate(1 hour)"),
      Name: "to-sqs",
      Target: { Arn: "arn:aws:sqs:eu-west-1:1:q", RoleArn: "r" },
    },
    "default/off": { ...source("rate(1 day)"), Name: "off", State: "DISABLED" },
  };
  const existing = new Map<string, ScheduleBody>();
  const hourglass = {
    async createSchedule(input: { id?: string }) {
      const known = existing.get(input.id!);
      if (known) return known;
      const body = { id: input.id!, createdAt: new Date().toISOString() } as ScheduleBody;
      if (input.id === "conflicting")
        throw new HourglassApiError(409, { type: "x", title: "conflict", status: 409 });
      existing.set(input.id!, { ...body, createdAt: "2020-01-01T00:00:00.000Z" });
      return body;
    },
  } as unknown as HourglassClient;

  beforeEach(() => {
    scheduler.reset();
    existing.clear();
    scheduler
      .on(ListSchedulesCommand)
      .resolvesOnce({
        Schedules: [
          { Name: "nightly", GroupName: "default" },
          { Name: "hourly", GroupName: "default" },
        ],
        NextToken: "p2",
      })
      .resolvesOnce({
        Schedules: [
          { Name: "to-sqs", GroupName: "default" },
          { Name: "off", GroupName: "default" },
        ],
      });
    scheduler
      .on(GetScheduleCommand)
      .callsFake((input: { Name: string; GroupName: string }) => sources[`${input.GroupName}/${input.Name}`]);
    scheduler.on(UpdateScheduleCommand).resolves({ ScheduleArn: "arn" });
  });

  it("--dry-run pages through every schedule, maps and reports, and changes nothing", async () => {
    const rows = await importFromEventBridge(scheduler as unknown as SchedulerClient, hourglass, {
      dryRun: true,
      disableSource: true,
      progress: false,
      prefix: "n",
    });
    expect(scheduler.commandCalls(ListSchedulesCommand)[0]!.args[0].input).toMatchObject({ NamePrefix: "n" });
    expect(rows.map((r) => [r.source, r.mapping, r.result])).toEqual([
      ["default/nightly", "mapped", "would create"],
      ["default/hourly", "mapped", "would create"],
      ["default/to-sqs", "refused", "refused"],
      ["default/off", "mapped", "would create"],
    ]);
    expect(existing.size).toBe(0);
    expect(scheduler.commandCalls(UpdateScheduleCommand)).toHaveLength(0);
  });

  it("creates each twin once across runs, and --disable-source carries every field over in UpdateSchedule", async () => {
    const options = { dryRun: false, disableSource: true, progress: false };
    const first = await importFromEventBridge(scheduler as unknown as SchedulerClient, hourglass, options);
    expect(first.map((r) => [r.source, r.result, r.disabled])).toEqual([
      ["default/nightly", "created", true],
      ["default/hourly", "created", true],
      ["default/to-sqs", "refused", false],
      ["default/off", "created", false], // already disabled at the source
    ]);
    const updates = scheduler.commandCalls(UpdateScheduleCommand).map((c) => c.args[0].input);
    expect(updates).toHaveLength(2);
    const hourly = sources["default/hourly"]!;
    expect(updates[1]).toEqual({
      Name: "hourly",
      GroupName: "default",
      ScheduleExpression: "rate(1 hour)",
      Description: "keep me",
      KmsKeyArn: "arn:aws:kms:k",
      ActionAfterCompletion: "NONE",
      FlexibleTimeWindow: hourly.FlexibleTimeWindow,
      Target: hourly.Target,
      State: "DISABLED",
    });
    // Every field GetSchedule returns, except read-only ones, goes back in the update.
    const readOnly = ["$metadata", "Arn", "CreationDate", "LastModificationDate", "State"];
    for (const key of Object.keys(hourly).filter((k) => !readOnly.includes(k))) {
      expect(disabledCopy(hourly)).toHaveProperty(key);
    }

    scheduler.reset();
    scheduler.on(ListSchedulesCommand).resolves({ Schedules: [{ Name: "nightly", GroupName: "default" }] });
    scheduler.on(GetScheduleCommand).resolves(sources["default/nightly"]!);
    const again = await importFromEventBridge(scheduler as unknown as SchedulerClient, hourglass, {
      ...options,
      disableSource: false,
    });
    expect(again.map((r) => r.result)).toEqual(["existing"]);
    expect(existing.size).toBe(3);
  });

  it("skips an Hourglass deployment's own dispatcher schedule, and never disables it", async () => {
    const dispatcherArn =
      "arn:aws:lambda:eu-west-1:123456789012:function:Hourglass-HourglassDispatcherFunction0FD9-AbC123";
    const own: Record<string, GetScheduleCommandOutput> = {
      // As the construct deploys it: unnamed, so CloudFormation names it after the logical id.
      "default/Hourglass-HourglassDispatchSchedule1A2B3C4D-x7Yz9": {
        ...source("rate(1 minute)"),
        Name: "Hourglass-HourglassDispatchSchedule1A2B3C4D-x7Yz9",
        Description: DISPATCH_SCHEDULE_DESCRIPTION,
        Target: { Arn: dispatcherArn, RoleArn: "arn:aws:iam::123456789012:role/schedule" },
      },
      // A deployment whose description was changed by hand is still known by its name.
      "default/Staging-OpsDispatchScheduleFFEE0011-q1": {
        ...source("rate(1 minute)"),
        Name: "Staging-OpsDispatchScheduleFFEE0011-q1",
        Target: { Arn: dispatcherArn, RoleArn: "arn:aws:iam::123456789012:role/schedule" },
      },
      // The user's own schedule that happens to mention dispatch is imported as usual.
      "default/dispatch-report": { ...source("rate(1 day)"), Name: "dispatch-report" },
    };
    scheduler.reset();
    scheduler.on(ListSchedulesCommand).resolves({
      Schedules: Object.keys(own).map((key) => ({ Name: key.split("/")[1], GroupName: "default" })),
    });
    scheduler
      .on(GetScheduleCommand)
      .callsFake((input: { Name: string; GroupName: string }) => own[`${input.GroupName}/${input.Name}`]);
    scheduler.on(UpdateScheduleCommand).resolves({ ScheduleArn: "arn" });
    const rows = await importFromEventBridge(scheduler as unknown as SchedulerClient, hourglass, {
      dryRun: false,
      disableSource: true,
      progress: false,
    });
    expect(rows.map((r) => [r.source, r.mapping, r.result, r.disabled])).toEqual([
      ["default/Hourglass-HourglassDispatchSchedule1A2B3C4D-x7Yz9", "skipped", "skipped", false],
      ["default/Staging-OpsDispatchScheduleFFEE0011-q1", "skipped", "skipped", false],
      ["default/dispatch-report", "mapped", "created", true],
    ]);
    expect(rows[0]!.notes.join()).toMatch(/dispatcher schedule of an Hourglass deployment/);
    expect([...existing.keys()]).toEqual(["dispatch-report"]);
    const disabled = scheduler.commandCalls(UpdateScheduleCommand).map((c) => c.args[0].input.Name);
    expect(disabled).toEqual(["dispatch-report"]);
  });
});
