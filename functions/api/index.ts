// The deployment may swap in its own handler module for this one (see the Hourglass construct).
import { handlers } from "@hourglass/handlers";
import { handle } from "hono/aws-lambda";
import { createHourglass } from "../../shared/hourglass.ts";
import { apiDeps, createApp } from "../../shared/http/app.ts";

// Built once per container, at module scope, and reused by every invocation.
const hourglass = await createHourglass({ service: "hourglass-api", handlers });

const app = handle(createApp(apiDeps(hourglass)));

// The metrics of created events are flushed before Lambda freezes the process between invocations.
export const handler: typeof app = async (event, context) => {
  try {
    return await app(event, context);
  } finally {
    await hourglass.metrics.flush();
    await hourglass.notifier.flush(); // failures are logged; the API publishes no CloudWatch metrics
  }
};
