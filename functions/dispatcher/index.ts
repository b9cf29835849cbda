// The deployment may swap in its own handler module for this one (see the Hourglass construct).
import { handlers } from "@hourglass/handlers";
import type { Context } from "aws-lambda";
import { createHourglass } from "../../shared/hourglass.ts";
import { createMetrics, flushNotifications, recordTick } from "../../shared/metrics.ts";

const hourglass = await createHourglass({ service: "hourglass-dispatcher", handlers });
const metrics = createMetrics("dispatcher");

/** Time kept back from the Lambda's budget, so a slow last claim still finishes its sends. */
const RESERVE_MS = 5_000;

/** Invoked every minute by EventBridge Scheduler: claims and sends until nothing is due. */
export const handler = async (_event: unknown, context: Context) => {
  const report = await hourglass.dispatcher.tick(
    Math.max(1_000, context.getRemainingTimeInMillis() - RESERVE_MS),
  );
  // A recovery page that ran past the tick's deadline finishes before Lambda freezes the process.
  await hourglass.dispatcher.settled();
  recordTick(metrics, report, await hourglass.dispatcher.indexHealth());
  await flushNotifications(metrics, hourglass.notifier);
  metrics.publishStoredMetrics();
  return report;
};
