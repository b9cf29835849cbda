import { Duration } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as actions from "aws-cdk-lib/aws-cloudwatch-actions";
import type * as lambda from "aws-cdk-lib/aws-lambda";
import type * as sns from "aws-cdk-lib/aws-sns";
import type * as sqs from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { METRIC, METRICS_NAMESPACE } from "../../shared/metrics.ts";

export interface Watched {
  readonly dispatcher: lambda.IFunction;
  readonly worker: lambda.IFunction;
  readonly api: lambda.IFunction;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  readonly scheduleDeadLetterQueue: sqs.IQueue;
}

/** What the thresholds are derived from. */
export interface Cadence {
  /** How far ahead events are sent with an SQS delay: the longest a healthy message waits. */
  readonly lookAheadSeconds: number;
  /** The work queue's: how long a message whose run failed to be recorded stays away. */
  readonly visibilityTimeoutSeconds: number;
}

/** PRODUCT.md's target for steady load on AWS: p99 lateness at most 1.5 s. */
export const LATENESS_TARGET_MS = 1_500;

const metric = (name: string, service: string, statistic: string, period = Duration.minutes(1)) =>
  new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service },
    statistic,
    period,
  });

/** Alarms on what users feel (lost, late or failing work) and one dashboard showing the same. */
export function createObservability(
  scope: Construct,
  watched: Watched,
  cadence: Cadence,
  topic: sns.ITopic | undefined,
) {
  const overdue = metric(METRIC.overdueLag, "dispatcher", "Maximum");
  const oldestMessageSeconds = cadence.lookAheadSeconds + cadence.visibilityTimeoutSeconds + 60;
  const alarm = (
    id: string,
    alarmDescription: string,
    watchedMetric: cloudwatch.IMetric,
    threshold: number,
    options: Partial<
      Pick<
        cloudwatch.AlarmProps,
        "comparisonOperator" | "evaluationPeriods" | "datapointsToAlarm" | "treatMissingData"
      >
    > = {},
  ) =>
    new cloudwatch.Alarm(scope, id, {
      alarmDescription,
      metric: watchedMetric,
      threshold,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      ...options,
    });
  // A dead-letter queue with anything in it is worth a look.
  const nonEmpty = (id: string, description: string, queue: sqs.IQueue) =>
    alarm(
      id,
      description,
      queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(1) }),
      0,
      {
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      },
    );
  const fiveMinuteSum = { period: Duration.minutes(5), statistic: "Sum" };
  const alarms = {
    deadLetters: nonEmpty(
      "WorkDlqDepth",
      "Messages reached the work queue's DLQ: the worker failed on them five times in a row",
      watched.deadLetterQueue,
    ),
    dispatcherErrors: alarm(
      "DispatcherErrors",
      "The dispatcher failed: events are not being moved to the queue",
      watched.dispatcher.metricErrors(fiveMinuteSum),
      2,
    ),
    missedRuns: alarm(
      "DispatcherMissedRuns",
      "The dispatcher ran fewer than 4 times in 5 minutes: the schedule is not firing",
      watched.dispatcher.metricInvocations(fiveMinuteSum),
      4,
      {
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      },
    ),
    scheduleDeadLetters: nonEmpty(
      "ScheduleDlqDepth",
      "EventBridge Scheduler could not invoke the dispatcher",
      watched.scheduleDeadLetterQueue,
    ),
    overdueLag: alarm(
      "OverdueLag",
      "An event is more than 2 minutes past due and still not claimed",
      overdue,
      120_000,
      {
        evaluationPeriods: 3,
      },
    ),
    failedShards: alarm(
      "DispatchShardFailures",
      "Claims or sends failed on some shards (see the dispatcher's log): their events are not moving",
      metric(METRIC.failedShards, "dispatcher", "Sum", Duration.minutes(5)),
      2,
    ),
    quarantined: alarm(
      "QuarantinedEntries",
      "The index set aside entries no script could read (see the dispatcher's log): inspect them",
      metric(METRIC.quarantined, "dispatcher", "Maximum"),
      0,
      { comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD },
    ),
    workerErrors: alarm(
      "WorkerErrors",
      "The worker Lambda failed (infrastructure errors, not handler failures)",
      watched.worker.metricErrors(fiveMinuteSum),
      5,
    ),
    // A healthy message is at most the look-ahead old when its delay ends, and a worker takes it
    // within seconds; one whose run failed to be recorded comes back after the visibility timeout
    // (a message received three times no longer counts in this metric; the DLQ alarm covers it).
    // Older than both plus a dispatcher period, for three minutes running: messages are waiting
    // for a worker that does not take them (throttled, failing, or its event source disabled),
    // which the lateness alarm cannot see, since nothing that does not run reports lateness.
    oldestMessage: alarm(
      "WorkQueueOldestMessage",
      `A work-queue message is older than the look-ahead, a visibility timeout and a minute (${oldestMessageSeconds} s): the worker is not taking messages`,
      watched.queue.metricApproximateAgeOfOldestMessage({
        period: Duration.minutes(1),
        statistic: "Maximum",
      }),
      oldestMessageSeconds,
      { evaluationPeriods: 3, comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD },
    ),
    // p99 of each minute's starts; 3 of 5 minutes, so one or two slow minutes (a cold start, a
    // burst drained at full concurrency) do not page and a lasting slip does. No work, no data:
    // not breaching.
    lateness: alarm(
      "StartLateness",
      `Events start late: p99 lateness above ${LATENESS_TARGET_MS} ms (PRODUCT.md's target) in 3 of the last 5 minutes`,
      metric(METRIC.lateness, "worker", "p99"),
      LATENESS_TARGET_MS,
      {
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      },
    ),
  };
  if (topic) for (const alarm of Object.values(alarms)) alarm.addAlarmAction(new actions.SnsAction(topic));

  const dashboard = new cloudwatch.Dashboard(scope, "Dashboard", { defaultInterval: Duration.hours(3) });
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: "Dispatched per minute",
      left: [
        metric(METRIC.dispatched, "dispatcher", "Sum"),
        metric(METRIC.sendFailures, "dispatcher", "Sum"),
      ],
    }),
    new cloudwatch.GraphWidget({
      title: "Lateness (ms): p50, p99",
      left: [metric(METRIC.lateness, "worker", "p50"), metric(METRIC.lateness, "worker", "p99")],
    }),
    new cloudwatch.GraphWidget({
      title: "Outcomes",
      left: [
        metric(METRIC.succeeded, "worker", "Sum"),
        metric(METRIC.retried, "worker", "Sum"),
        metric(METRIC.deadLettered, "worker", "Sum"),
      ],
    }),
  );
  dashboard.addWidgets(
    new cloudwatch.GraphWidget({
      title: "Index size",
      left: [metric(METRIC.indexSize, "dispatcher", "Maximum")],
    }),
    new cloudwatch.GraphWidget({ title: "Oldest overdue (ms)", left: [overdue] }),
    new cloudwatch.AlarmStatusWidget({ title: "Alarms", alarms: Object.values(alarms) }),
  );
  return { alarms, dashboard };
}
