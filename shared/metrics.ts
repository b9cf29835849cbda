import { Metrics, MetricUnit } from "@aws-lambda-powertools/metrics";
import type { TickReport } from "./events/dispatcher.ts";
import type { WorkResult } from "./events/worker.ts";
import type { Notifier } from "./notifications/notifier.ts";

/** CloudWatch metrics (EMF, through Powertools) under one namespace; the CDK alarms read these names. */
export const METRICS_NAMESPACE = "Hourglass";
export const METRIC = {
  dispatched: "Dispatched",
  sendFailures: "SendFailures",
  restored: "Restored",
  indexSize: "IndexSize",
  overdueLag: "OldestOverdueMs",
  quarantined: "Quarantined",
  failedShards: "FailedShards",
  lateness: "LatenessMs",
  succeeded: "Succeeded",
  retried: "Retried",
  /** Of the retries, those given back (not counted against maxAttempts): a dependency was unavailable. */
  givenBack: "GivenBack",
  deadLettered: "DeadLettered",
  dropped: "Dropped",
  notificationFailures: "NotificationFailures",
  /** Messages whose event flow control held back (paused type, rate, concurrency): parked, not run. */
  held: "Held",
} as const;

export function createMetrics(service: string): Metrics {
  return new Metrics({ namespace: METRICS_NAMESPACE, serviceName: service });
}

export function recordTick(
  metrics: Metrics,
  report: TickReport,
  index: { size: number; oldestOverdueMs: number; quarantined: number },
) {
  metrics.addMetric(METRIC.dispatched, MetricUnit.Count, report.sent);
  metrics.addMetric(METRIC.sendFailures, MetricUnit.Count, report.failed);
  metrics.addMetric(METRIC.restored, MetricUnit.Count, report.restored);
  // A failing shard no longer fails the tick (so the Lambda's error count misses it): count it here.
  metrics.addMetric(METRIC.failedShards, MetricUnit.Count, report.failedShards.length);
  metrics.addMetric(METRIC.indexSize, MetricUnit.Count, index.size);
  metrics.addMetric(METRIC.overdueLag, MetricUnit.Milliseconds, index.oldestOverdueMs);
  metrics.addMetric(METRIC.quarantined, MetricUnit.Count, index.quarantined);
}

export function recordWork(metrics: Metrics, result: WorkResult) {
  const counter = {
    succeeded: METRIC.succeeded,
    retrying: METRIC.retried,
    dead: METRIC.deadLettered,
    dropped: METRIC.dropped,
    held: METRIC.held,
  }[result.outcome];
  metrics.addMetric(counter, MetricUnit.Count, 1);
  if (result.givenBack) metrics.addMetric(METRIC.givenBack, MetricUnit.Count, 1);
  if (result.outcome !== "dropped" && result.outcome !== "held" && result.lateMs !== undefined) {
    metrics.addMetric(METRIC.lateness, MetricUnit.Milliseconds, result.lateMs);
  }
}

/**
 * Delivers the buffered notifications before Lambda freezes the process, and counts what could
 * not be delivered since the last call (failed or dropped) as a metric.
 */
export async function flushNotifications(metrics: Metrics, notifier: Notifier): Promise<void> {
  const before = notifier.stats();
  await notifier.flush();
  const after = notifier.stats();
  const lost = after.failed + after.dropped - before.failed - before.dropped;
  if (lost > 0) metrics.addMetric(METRIC.notificationFailures, MetricUnit.Count, lost);
}
