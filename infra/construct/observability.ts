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
  readonly deadLetterQueue: sqs.IQueue;
  readonly scheduleDeadLetterQueue: sqs.IQueue;
}

const metric = (name: string, service: string, statistic: string, period = Duration.minutes(1)) =>
  new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName: name,
    dimensionsMap: { service },
    statistic,
    period,
  });

/** Alarms on what users feel (lost, late or failing work) and one dashboard showing the same. */
export function createObservability(scope: Construct, watched: Watched, topic: sns.ITopic | undefined) {
  const overdue = metric(METRIC.overdueLag, "dispatcher", "Maximum");
  const alarms = {
    deadLetters: new cloudwatch.Alarm(scope, "WorkDlqDepth", {
      alarmDescription:
        "Messages reached the work queue's DLQ: the worker failed on them five times in a row",
      metric: watched.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    dispatcherErrors: new cloudwatch.Alarm(scope, "DispatcherErrors", {
      alarmDescription: "The dispatcher failed: events are not being moved to the queue",
      metric: watched.dispatcher.metricErrors({ period: Duration.minutes(5), statistic: "Sum" }),
      threshold: 2,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    missedRuns: new cloudwatch.Alarm(scope, "DispatcherMissedRuns", {
      alarmDescription: "The dispatcher ran fewer than 4 times in 5 minutes: the schedule is not firing",
      metric: watched.dispatcher.metricInvocations({ period: Duration.minutes(5), statistic: "Sum" }),
      threshold: 4,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    }),
    scheduleDeadLetters: new cloudwatch.Alarm(scope, "ScheduleDlqDepth", {
      alarmDescription: "EventBridge Scheduler could not invoke the dispatcher",
      metric: watched.scheduleDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
      }),
      threshold: 0,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    overdueLag: new cloudwatch.Alarm(scope, "OverdueLag", {
      alarmDescription: "An event is more than 2 minutes past due and still not claimed",
      metric: overdue,
      threshold: 120_000,
      evaluationPeriods: 3,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
    workerErrors: new cloudwatch.Alarm(scope, "WorkerErrors", {
      alarmDescription: "The worker Lambda failed (infrastructure errors, not handler failures)",
      metric: watched.worker.metricErrors({ period: Duration.minutes(5), statistic: "Sum" }),
      threshold: 5,
      evaluationPeriods: 1,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    }),
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
