import { OpenAPIHono } from "@hono/zod-openapi";
import { fieldIssues } from "../events/validate.ts";
import type { Hourglass } from "../hourglass.ts";
import { jsonBodies } from "./body.ts";
import { problem, problemFor, sendProblem } from "./problem.ts";
import { mountEventRoutes } from "./routes/events.ts";
import { mountHealthRoute, mountOperationRoutes } from "./routes/operations.ts";
import { type TenantEnv, tenancy } from "./tenancy.ts";

export const API_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Hourglass API",
    version: "1.0.0",
    description:
      "Scheduled work for AWS: run a job at any time from one second to a year ahead, inspect, move or cancel it until it runs.",
  },
} as const;

/**
 * The one HTTP app: served by `@hono/node-server` locally and by `hono/aws-lambda` on AWS.
 * Bad input is answered with a 4xx problem document and changes nothing.
 */
export function createApp(hourglass: Hourglass): OpenAPIHono<TenantEnv> {
  const app = new OpenAPIHono<TenantEnv>({
    defaultHook: (result, c) => {
      if (result.success) return;
      // A path parameter that cannot be an id names no event.
      if (result.target === "param") {
        return sendProblem(c, problem("not-found", "No such event", 404, { detail: "not a valid event id" }));
      }
      const errors = fieldIssues(result.error);
      return sendProblem(
        c,
        problem("validation", "The request breaks a rule", 422, {
          detail: errors.map((e) => `${e.path || "(body)"}: ${e.message}`).join("; "),
          errors,
        }),
      );
    },
  });

  mountHealthRoute(app, hourglass);
  app.get("/openapi.json", (c) => c.json(app.getOpenAPI31Document(API_INFO)));
  app.use("/v1/*", ...jsonBodies(hourglass.config.maxBodyBytes), tenancy(hourglass.config));
  mountEventRoutes(app, hourglass.events);
  mountOperationRoutes(app, hourglass);

  app.notFound((c) =>
    sendProblem(c, problem("not-found", "No such route", 404, { detail: `${c.req.method} ${c.req.path}` })),
  );
  app.onError((error, c) => {
    const body = problemFor(error);
    if (body.status >= 500) hourglass.logger.error("request failed", { path: c.req.path, error });
    return sendProblem(c, body);
  });
  return app;
}
