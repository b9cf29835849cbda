import { handle } from "hono/aws-lambda";
import { createHourglass } from "../../shared/hourglass.ts";
import { apiDeps, createApp } from "../../shared/http/app.ts";
import { handlers } from "../handlers.ts";

// Built once per container, at module scope, and reused by every invocation.
const hourglass = await createHourglass({ service: "hourglass-api", handlers });

export const handler = handle(createApp(apiDeps(hourglass)));
