import { OpenAPIHono } from "@hono/zod-openapi";
import type { HourglassConfig } from "../config.ts";
import { mountDashboardPage } from "../dashboard/routes.ts";
import type { EventService } from "../events/service.ts";
import { fieldIssues } from "../events/validate.ts";
import type { WebhookSigning } from "../handlers/signing.ts";
import type { Hourglass } from "../hourglass.ts";
import { JournalRequiredError } from "../journal/errors.ts";
import type { LeaseService } from "../leases/lease-service.ts";
import type { StockLedger } from "../ledger/ledger-service.ts";
import type { FlowControl } from "../limits/flow-control.ts";
import type { Logger } from "../logger.ts";
import { type Insights, insightsOf } from "../metrics-store/insights.ts";
import { type NotificationStreams, notificationStreams } from "../notifications/stream-reader.ts";
import type { ScheduleService } from "../schedules/service.ts";
import { jsonBodies } from "./body.ts";
import { mountDocs } from "./docs.ts";
import { checkHealth, type HealthReport } from "./health.ts";
import { localRequestGuard } from "./local-guard.ts";
import { problem, problemFor, sendProblem } from "./problem.ts";
import { type AdminControl, adminControl, mountAdminRoutes } from "./routes/admin.ts";
import { mountEventRoutes } from "./routes/events.ts";
import { mountLeaseRoutes } from "./routes/leases.ts";
import { mountMetricsRoutes } from "./routes/metrics.ts";
import { mountHealthRoute, mountOperationRoutes } from "./routes/operations.ts";
import { mountScheduleRoutes } from "./routes/schedules.ts";
import { mountStockRoutes } from "./routes/stock.ts";
import { mountStreamRoute } from "./routes/stream.ts";
import { createsCap, mountTypeLimitRoutes } from "./routes/type-limits.ts";
import { mountWebhookSecretRoutes } from "./routes/webhook-secret.ts";
import { identifier, type TenantEnv, tenancy } from "./tenancy.ts";

export const API_INFO = {
  openapi: "3.1.0",
  info: {
    title: "Hourglass API",
    version: "1.0.0",
    description:
      "Scheduled work for AWS: run a job at any time from one second to a year ahead, inspect, move or cancel it until it runs.",
  },
} as const;

/** What the HTTP layer calls; nothing else of the engine is visible to it. */
export interface ApiDeps {
  readonly config: HourglassConfig;
  readonly logger: Logger;
  readonly events: EventService;
  /** Absent in the engine-only mode: their routes then answer 501. */
  readonly leases: LeaseService | undefined;
  readonly ledger: StockLedger | undefined;
  readonly signing: Pick<WebhookSigning, "secretsFor" | "rotate"> | undefined;
  /** Metrics and the pending timeline; absent only where an app is built without Redis. */
  readonly insights?: Insights;
  readonly schedules?: ScheduleService | undefined;
  health(): Promise<HealthReport>;
  readonly admin?: AdminControl;
  /** The tenants' notification streams (`GET /v1/events/stream`); absent: 501. */
  readonly streams?: NotificationStreams;
  /** Type limits and the per-tenant caps; absent where an app is built without Redis. */
  readonly flow?: FlowControl | undefined;
}

export function apiDeps(hourglass: Hourglass): ApiDeps {
  return {
    config: hourglass.config,
    logger: hourglass.logger,
    events: hourglass.events,
    leases: hourglass.leases,
    ledger: hourglass.ledger,
    signing: hourglass.signing,
    insights: insightsOf(hourglass),
    schedules: hourglass.schedules,
    health: () => checkHealth(hourglass),
    admin: adminControl(hourglass),
    streams: notificationStreams(hourglass.redis, hourglass.config.keyPrefix),
    flow: hourglass.flow,
  };
}

/**
 * The one HTTP app: served by `@hono/node-server` locally and by `hono/aws-lambda` on AWS.
 * Bad input is answered with a 4xx problem document and changes nothing.
 */
export function createApp(deps: ApiDeps): OpenAPIHono<TenantEnv> {
  const app = new OpenAPIHono<TenantEnv>({
    defaultHook: (result, c) => {
      if (result.success) return;
      // A path parameter that cannot be an id or a name names nothing that exists.
      if (result.target === "param") {
        return sendProblem(c, problem("not-found", "Not found", 404, { detail: "not a valid id or name" }));
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

  registerSecuritySchemes(app);
  if (deps.config.mode === "local") app.use("*", localRequestGuard(deps.config.allowedHosts));
  const identify = identifier(deps.config);
  mountHealthRoute(app, deps.health, (c) => "tenant" in identify(c), deps.logger);
  app.get("/openapi.json", (c) => c.json(openApiDocument(app)));
  mountDocs(app);
  mountAdminRoutes(app, deps); // before tenancy: admin tokens name no tenant
  app.use("/v1/*", ...jsonBodies(deps.config.maxBodyBytes), tenancy(deps.config));
  // Before the event routes, whose `/v1/events/{id}` would take `stream` for an id.
  mountStreamRoute(app, deps);
  app.use(
    "/v1/events",
    createsCap(() => deps.flow),
  );
  app.use(
    "/v1/events/batch",
    createsCap(() => deps.flow),
  );
  mountEventRoutes(app, deps.events);
  mountOperationRoutes(app, deps.events);
  mountLeaseRoutes(app, () => deps.leases ?? unavailable("leases"));
  mountStockRoutes(app, () => deps.ledger ?? unavailable("the stock ledger"));
  mountWebhookSecretRoutes(app, () => deps.signing ?? unavailable("webhook signing"));
  // The metrics and timeline routes are public API; the dashboard page is one reader of them.
  mountMetricsRoutes(app, () => deps.insights ?? unavailable("metrics"));
  mountDashboardPage(app);
  mountScheduleRoutes(app, () => deps.schedules ?? unavailable("recurring schedules"));
  mountTypeLimitRoutes(app, () => deps.flow ?? unavailable("type limits"));

  app.notFound((c) =>
    sendProblem(c, problem("not-found", "No such route", 404, { detail: `${c.req.method} ${c.req.path}` })),
  );
  app.onError((error, c) => {
    const body = problemFor(error);
    if (body.status >= 500) deps.logger.error("request failed", { path: c.req.path, error });
    return sendProblem(c, body);
  });
  return app;
}

function registerSecuritySchemes(app: OpenAPIHono<TenantEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
    description: "Local mode with HOURGLASS_API_TOKENS: the token names the tenant.",
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "sigv4", {
    type: "apiKey",
    name: "Authorization",
    in: "header",
    description:
      "On AWS: API Gateway IAM authorization (AWS Signature Version 4); the caller's principal names the tenant.",
  });
}

/** The OpenAPI 3.1 document, with the security schemes the deployments use. */
export function openApiDocument(app: OpenAPIHono<TenantEnv>) {
  return app.getOpenAPI31Document({ ...API_INFO, security: [{ bearer: [] }, { sigv4: [] }] });
}

/**
 * The document as the code describes it, built without any service behind the routes: for the
 * committed `docs/openapi.json` and the test that keeps it in step.
 */
export function describeApi(config: HourglassConfig, logger: Logger) {
  const unavailable = () => {
    throw new Error("documentation-only app: no services behind it");
  };
  const events = new Proxy({}, { get: unavailable }) as EventService;
  return openApiDocument(
    createApp({
      config,
      logger,
      events,
      leases: undefined,
      ledger: undefined,
      signing: undefined,
      health: unavailable,
    }),
  );
}

function unavailable(what: string): never {
  throw new JournalRequiredError(what);
}
