import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CloudWatchClient, DescribeAlarmsCommand, GetMetricDataCommand } from "@aws-sdk/client-cloudwatch";
import {
  GetScheduleCommand,
  type GetScheduleCommandOutput,
  SchedulerClient,
  type ScheduleState,
  UpdateScheduleCommand,
  type UpdateScheduleCommandInput,
} from "@aws-sdk/client-scheduler";
import { GetQueueAttributesCommand, SQSClient } from "@aws-sdk/client-sqs";
import { METRIC, METRICS_NAMESPACE } from "../metrics.ts";
import {
  type AdminRoute,
  type AdminView,
  adminRoute,
  adminView,
  failedHalf,
  type PauseResult,
} from "./admin-route.ts";

/**
 * What `hourglass status|pause|resume --aws` does to a deployed stack, without the command line:
 * its outputs, the admin routes at its ApiUrl (SigV4), its dispatcher schedule, its queues' depths
 * and its alarms. The commands themselves are in ops-commands.ts.
 */
/** The stack outputs `hourglass status|pause|resume --aws` reads (infra/stacks/hourglass-stack.ts). */
export const OPS_OUTPUTS = {
  schedule: "DispatchSchedule",
  scheduleGroup: "DispatchScheduleGroup",
  queue: "WorkQueueUrl",
  deadLetterQueue: "DeadLetterQueueUrl",
  alarms: "AlarmNames",
  apiUrl: "ApiUrl",
} as const;

export interface OpsClients {
  readonly cloudFormation: CloudFormationClient;
  readonly scheduler: SchedulerClient;
  readonly sqs: SQSClient;
  readonly cloudWatch: CloudWatchClient;
  /** The deployment's admin routes at its `ApiUrl`, signed with SigV4 for `region`. */
  readonly admin: (apiUrl: string, region: string) => AdminRoute;
}

export function opsClients(region?: string): OpsClients {
  const config = region ? { region } : {};
  return {
    cloudFormation: new CloudFormationClient(config),
    scheduler: new SchedulerClient(config),
    // The endpoint the SDK resolves, not the queue URL's host: on AWS they agree; behind LocalStack or
    // the AWS-shaped mode the URL names a host that does not resolve (sqs.us-east-1.localhost).
    sqs: new SQSClient({ ...config, useQueueUrlAsEndpoint: false }),
    cloudWatch: new CloudWatchClient(config),
    admin: (apiUrl, signingRegion) => adminRoute(apiUrl, { sigv4Region: signingRegion }),
  };
}

/** The admin routes of the stack's API, signed for the region the AWS clients resolved. */
async function adminOf(clients: OpsClients, d: Deployment): Promise<AdminRoute> {
  return clients.admin(d.apiUrl, await clients.cloudFormation.config.region());
}

export class OpsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OpsError";
  }
}

interface Deployment {
  readonly schedule: string;
  readonly scheduleGroup: string;
  readonly queueUrl: string;
  readonly deadLetterQueueUrl: string;
  readonly alarms: readonly string[];
  readonly apiUrl: string;
}

async function deployment(clients: OpsClients, stack: string): Promise<Deployment> {
  const described = await clients.cloudFormation.send(new DescribeStacksCommand({ StackName: stack }));
  const outputs = new Map(
    (described.Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? "", o.OutputValue ?? ""]),
  );
  const need = (key: string) => {
    const value = outputs.get(key);
    if (!value) {
      throw new OpsError(
        `stack ${stack} has no ${key} output: it predates these commands, or its dispatcher runs from an EventBridge rule (LocalStack); redeploy it`,
      );
    }
    return value;
  };
  return {
    schedule: need(OPS_OUTPUTS.schedule),
    scheduleGroup: outputs.get(OPS_OUTPUTS.scheduleGroup) || "default",
    queueUrl: need(OPS_OUTPUTS.queue),
    deadLetterQueueUrl: need(OPS_OUTPUTS.deadLetterQueue),
    alarms: (outputs.get(OPS_OUTPUTS.alarms) ?? "").split(",").filter(Boolean),
    apiUrl: need(OPS_OUTPUTS.apiUrl),
  };
}

export interface AwsStatus {
  readonly stack: string;
  readonly dispatcher: {
    readonly schedule: string;
    readonly state: string;
    readonly expression: string;
    readonly lastModified: string | undefined;
  };
  readonly queue: QueueDepth;
  readonly deadLetterQueue: QueueDepth;
  readonly alarmsInAlarm: readonly string[];
  /** The dispatcher's latest OldestOverdueMs metric (last 15 minutes), or null without data. */
  readonly oldestOverdueMs: number | null;
  /** The admin route's answer: the Redis pause key every path checks, and the live index. */
  readonly admin: AdminView;
}

export interface QueueDepth {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

async function depth(sqs: SQSClient, queueUrl: string): Promise<QueueDepth> {
  const { Attributes: a = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
      ],
    }),
  );
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}

/** Is it dispatching? The schedule, the queues, the alarms firing and the oldest overdue event. */
export async function awsStatus(clients: OpsClients, stack: string, now = new Date()): Promise<AwsStatus> {
  const d = await deployment(clients, stack);
  const admin = await adminOf(clients, d);
  const [schedule, queue, deadLetterQueue, alarms, overdue, adminStatus] = await Promise.all([
    clients.scheduler.send(new GetScheduleCommand({ Name: d.schedule, GroupName: d.scheduleGroup })),
    depth(clients.sqs, d.queueUrl),
    depth(clients.sqs, d.deadLetterQueueUrl),
    d.alarms.length === 0
      ? Promise.resolve({ MetricAlarms: [] })
      : clients.cloudWatch.send(
          new DescribeAlarmsCommand({ AlarmNames: [...d.alarms], StateValue: "ALARM" }),
        ),
    clients.cloudWatch.send(
      new GetMetricDataCommand({
        StartTime: new Date(now.getTime() - 15 * 60_000),
        EndTime: now,
        ScanBy: "TimestampDescending",
        MetricDataQueries: [
          {
            Id: "overdue",
            MetricStat: {
              Metric: {
                Namespace: METRICS_NAMESPACE,
                MetricName: METRIC.overdueLag,
                Dimensions: [{ Name: "service", Value: "dispatcher" }],
              },
              Period: 60,
              Stat: "Maximum",
            },
          },
        ],
      }),
    ),
    adminView(admin),
  ]);
  const latest = overdue.MetricDataResults?.[0]?.Values?.[0];
  return {
    stack,
    dispatcher: {
      schedule: `${d.scheduleGroup}/${d.schedule}`,
      state: schedule.State ?? "unknown",
      expression: schedule.ScheduleExpression ?? "",
      lastModified: schedule.LastModificationDate?.toISOString(),
    },
    queue,
    deadLetterQueue,
    alarmsInAlarm: (alarms.MetricAlarms ?? []).map((a) => a.AlarmName ?? "").filter(Boolean),
    oldestOverdueMs: latest ?? null,
    admin: adminStatus,
  };
}

/**
 * The UpdateSchedule request that changes only the state: UpdateSchedule replaces the whole
 * schedule, so every field GetSchedule returned is carried over (a field left out is reset).
 */
export function updateInputFor(
  schedule: GetScheduleCommandOutput,
  state: ScheduleState,
): UpdateScheduleCommandInput {
  if (!schedule.Name || !schedule.ScheduleExpression || !schedule.Target || !schedule.FlexibleTimeWindow) {
    throw new OpsError("GetSchedule returned an incomplete schedule; refusing to overwrite it");
  }
  return {
    Name: schedule.Name,
    GroupName: schedule.GroupName,
    ScheduleExpression: schedule.ScheduleExpression,
    ScheduleExpressionTimezone: schedule.ScheduleExpressionTimezone,
    StartDate: schedule.StartDate,
    EndDate: schedule.EndDate,
    Description: schedule.Description,
    State: state,
    KmsKeyArn: schedule.KmsKeyArn,
    Target: schedule.Target,
    FlexibleTimeWindow: schedule.FlexibleTimeWindow,
    ActionAfterCompletion: schedule.ActionAfterCompletion,
  };
}

/** Disables (pause) or enables (resume) the dispatcher's schedule; returns the state before and after. */
export async function setDispatcherState(
  clients: OpsClients,
  stack: string,
  state: ScheduleState,
): Promise<{ stack: string; schedule: string; before: string; after: string }> {
  const d = await deployment(clients, stack);
  const current = await clients.scheduler.send(
    new GetScheduleCommand({ Name: d.schedule, GroupName: d.scheduleGroup }),
  );
  const schedule = `${d.scheduleGroup}/${d.schedule}`;
  const before = current.State ?? "unknown";
  if (before === state) return { stack, schedule, before, after: state };
  await clients.scheduler.send(new UpdateScheduleCommand(updateInputFor(current, state)));
  return { stack, schedule, before, after: state };
}

/**
 * `pause|resume --aws`: the Redis pause key through the admin route (SigV4), and the schedule.
 *
 * The key is the switch every path checks: the dispatcher claims nothing, the API sends nothing
 * directly, the worker sends no retry of its own. The schedule only decides whether the dispatcher
 * runs at all. So the key is set first and cleared last. Pausing sets it, and every path stops at
 * once; then the schedule is disabled, which stops spending invocations. Its failure leaves
 * everything paused; the key's failure (a caller who is not an admin) still disables the schedule,
 * since during an incident stopping more is safer, and says what keeps flowing. Resuming enables
 * the schedule first, harmless while the key is set (the dispatcher runs and claims nothing), then
 * clears the key, and every path starts together. If the schedule cannot be enabled the key is left
 * set: clearing it would start direct sends and retries while nothing claims events beyond the
 * look-ahead, a deployment that looks alive and is not.
 */
export async function setDeploymentPaused(
  clients: OpsClients,
  stack: string,
  paused: boolean,
): Promise<PauseResult> {
  const d = await deployment(clients, stack);
  const admin = await adminOf(clients, d);
  const key = async (): Promise<PauseResult["pauseKey"]> =>
    admin.setPaused(paused).then((result) => ({ ok: true, result }), failedHalf);
  const schedule = async (): Promise<PauseResult["schedule"]> =>
    setDispatcherState(clients, stack, paused ? "DISABLED" : "ENABLED").then(
      ({ schedule, before, after }) => ({ ok: true, result: { schedule, before, after } }),
      failedHalf,
    );
  let pauseKey: PauseResult["pauseKey"];
  let scheduleHalf: PauseResult["schedule"];
  if (paused) {
    pauseKey = await key();
    scheduleHalf = await schedule();
  } else {
    scheduleHalf = await schedule();
    pauseKey = scheduleHalf.ok
      ? await key()
      : {
          ok: false,
          attempted: false,
          forbidden: false,
          error: "not attempted: the schedule was not enabled",
        };
  }
  return {
    stack,
    paused,
    pauseKey,
    schedule: scheduleHalf,
    complete: pauseKey.ok && scheduleHalf.ok,
  };
}
