// The deployment may swap in its own handler module for this one (see the Hourglass construct).
import { handlers } from "@hourglass/handlers";
import type { Context, SQSEvent } from "aws-lambda";
import { createSqsBatchHandler } from "../../shared/events/sqs-batch.ts";
import { createHourglass } from "../../shared/hourglass.ts";
import { createMetrics, flushNotifications, recordWork } from "../../shared/metrics.ts";

const hourglass = await createHourglass({ service: "hourglass-worker", handlers });
const metrics = createMetrics("worker");
const processBatch = createSqsBatchHandler(hourglass.worker, hourglass.logger, (result) =>
  recordWork(metrics, result),
);

/** The SQS event source calls this with up to 10 messages; failures come back as a partial batch response. */
export const handler = async (event: SQSEvent, context: Context) => {
  try {
    return await processBatch(event, context);
  } finally {
    await flushNotifications(metrics, hourglass.notifier); // the outcomes are recorded: off their path
    metrics.publishStoredMetrics();
    await hourglass.metrics.flush(); // before Lambda freezes the process, so the dashboard sees this batch
  }
};
