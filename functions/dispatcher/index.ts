import type { Context } from "aws-lambda";
import { createHourglass } from "../../shared/hourglass.ts";
import { handlers } from "../handlers.ts";

const hourglass = await createHourglass({ service: "hourglass-dispatcher", handlers });

/** Time kept back from the Lambda's budget, so a slow last claim still finishes its sends. */
const RESERVE_MS = 5_000;

/** Invoked every minute by EventBridge Scheduler: claims and sends until nothing is due. */
export const handler = async (_event: unknown, context: Context) =>
  hourglass.dispatcher.tick(Math.max(1_000, context.getRemainingTimeInMillis() - RESERVE_MS));
