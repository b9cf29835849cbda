import type { Context, SQSEvent } from "aws-lambda";
import { createHourglass } from "../../shared/hourglass.ts";
import { createSqsBatchHandler } from "../../shared/transport/sqs-batch.ts";
import { handlers } from "../handlers.ts";

const hourglass = await createHourglass({ service: "hourglass-worker", handlers });
const processBatch = createSqsBatchHandler(hourglass.worker, hourglass.logger);

/** The SQS event source calls this with up to 10 messages; failures come back as a partial batch response. */
export const handler = (event: SQSEvent, context: Context) => processBatch(event, context);
