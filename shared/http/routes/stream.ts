import { type OpenAPIHono, z } from "@hono/zod-openapi";
import { streamSSE } from "hono/streaming";
import type { HourglassConfig } from "../../config.ts";
import { EVENT_ID, EVENT_TYPE } from "../../events/schema.ts";
import type { Logger } from "../../logger.ts";
import { OCCURRENCE_ID, SCHEDULE_ID } from "../../model/occurrence-id.ts";
import { TRANSITIONS } from "../../notifications/model.ts";
import {
  matches,
  type NotificationStreams,
  STREAM_ID,
  type StreamFilter,
  type StreamSubscription,
} from "../../notifications/stream-reader.ts";
import { problem, sendProblem } from "../problem.ts";
import type { TenantEnv } from "../tenancy.ts";

/** A client's event id or a schedule's occurrence id: the stream follows either. */
const ANY_EVENT_ID = { test: (id: string) => EVENT_ID.test(id) || OCCURRENCE_ID.test(id) };

export interface StreamRouteDeps {
  readonly config: HourglassConfig;
  readonly logger: Logger;
  readonly streams?: NotificationStreams | undefined;
  /** How long a quiet stream waits before a heartbeat comment. @default 15 s */
  readonly heartbeatMs?: number;
}

const READ_COUNT = 100;

/**
 * `GET /v1/events/stream`: the caller's notifications as Server-Sent Events, `id:` = the Redis
 * stream id, `event:` = the transition, `data:` = the notification JSON. Resumes after
 * `Last-Event-ID` (header, or `lastEventId` in the query for a first connection) within the capped
 * window, and says `event: gap` when the window no longer holds everything after it.
 *
 * For long-running processes (`npm start`, a container): API Gateway REST buffers Lambda
 * responses, so on AWS this answers 501 and EventBridge is the way to follow transitions.
 */
export function mountStreamRoute(app: OpenAPIHono<TenantEnv>, deps: StreamRouteDeps): void {
  registerDocs(app);
  const open = new Map<string, number>();
  const heartbeatMs = deps.heartbeatMs ?? 15_000;
  app.get("/v1/events/stream", async (c) => {
    if (deps.config.mode === "aws" || !deps.streams || !deps.config.notifications.stream) {
      return sendProblem(
        c,
        problem("not-implemented", "The event stream is not served here", 501, {
          detail:
            deps.config.mode === "aws"
              ? "API Gateway buffers responses: follow transitions on the deployment's EventBridge bus"
              : "notifications to the Redis stream are off (HOURGLASS_NOTIFICATIONS / HOURGLASS_NOTIFY_STREAM)",
        }),
      );
    }
    const tenant = c.get("tenant");
    const query = c.req.query();
    const issues: { path: string; message: string }[] = [];
    const check = (
      name: string,
      value: string | undefined,
      pattern: { test(value: string): boolean },
      message: string,
    ) => {
      if (value !== undefined && !pattern.test(value)) issues.push({ path: name, message });
    };
    const lastEventId = c.req.header("last-event-id") ?? query.lastEventId;
    check("type", query.type, EVENT_TYPE, "not an event type");
    check("id", query.id, ANY_EVENT_ID, "not an event id");
    check("schedule", query.schedule, SCHEDULE_ID, "not a schedule id");
    check("Last-Event-ID", lastEventId, STREAM_ID, "not an id this stream handed out (<ms>-<seq>)");
    if (issues.length > 0) {
      return sendProblem(
        c,
        problem("validation", "The request breaks a rule", 422, {
          detail: issues.map((i) => `${i.path}: ${i.message}`).join("; "),
          errors: issues,
        }),
      );
    }
    // A tenant cannot take every connection of the process (invariant 7).
    const held = open.get(tenant) ?? 0;
    if (held >= deps.config.notifications.streamClientsPerTenant) {
      c.header("retry-after", "5");
      return sendProblem(
        c,
        problem("too-many-streams", "Too many open streams", 429, {
          detail: `at most ${deps.config.notifications.streamClientsPerTenant} per tenant`,
        }),
      );
    }
    // Counted before the first await, so concurrent requests cannot all pass the check.
    open.set(tenant, held + 1);
    const filter: StreamFilter = { type: query.type, id: query.id, schedule: query.schedule };
    const subscription = deps.streams.open(tenant);
    const release = () => {
      subscription.close();
      const left = (open.get(tenant) ?? 1) - 1;
      if (left > 0) open.set(tenant, left);
      else open.delete(tenant);
    };
    let start: Awaited<ReturnType<StreamSubscription["start"]>>;
    try {
      start = await subscription.start(lastEventId);
    } catch (error) {
      release();
      throw error;
    }
    c.header("cache-control", "no-cache");
    c.header("x-accel-buffering", "no");
    return streamSSE(
      c,
      async (stream) => {
        let released = false;
        const once = () => {
          if (!released) {
            released = true;
            release();
          }
        };
        stream.onAbort(once);
        try {
          await stream.writeSSE({ event: "ready", data: JSON.stringify({ tenant }), retry: 2_000 });
          if (start.gap) await stream.writeSSE({ event: "gap", data: JSON.stringify(start.gap) });
          let after = start.after;
          while (!stream.aborted && !stream.closed) {
            const entries = await subscription.read(after, heartbeatMs, READ_COUNT);
            if (stream.aborted || stream.closed) break;
            if (entries.length === 0) {
              await stream.write(": heartbeat\n\n");
              continue;
            }
            for (const entry of entries) {
              after = entry.streamId;
              if (!matches(entry.detail, filter)) continue;
              await stream.writeSSE({
                id: entry.streamId,
                event: entry.detail.transition,
                data: JSON.stringify(entry.detail),
              });
            }
          }
        } finally {
          once();
        }
      },
      async (error) => {
        deps.logger.warn("event stream ended by an error", { tenant, error: String(error) });
      },
    );
  });
}

function registerDocs(app: OpenAPIHono<TenantEnv>): void {
  app.openAPIRegistry.registerPath({
    method: "get",
    path: "/v1/events/stream",
    tags: ["Events"],
    summary: "Follow the caller's event transitions (Server-Sent Events)",
    description:
      "One SSE event per transition of the caller's events (" +
      TRANSITIONS.join(", ") +
      "): `id` is the stream position, `event` the transition, `data` the notification JSON " +
      "(id, tenant, type, attempt, status, time, error for failures). Reconnect with `Last-Event-ID` " +
      "to resume; when the capped window has dropped entries after it, an `event: gap` says so. " +
      "Local and long-running processes only: on AWS this answers 501 (use the EventBridge bus).",
    request: {
      query: z.object({
        type: z.string().optional().openapi({ description: "only events of this type" }),
        id: z.string().optional().openapi({ description: "only this event" }),
        schedule: z.string().optional().openapi({ description: "only occurrences of this schedule" }),
        lastEventId: z
          .string()
          .optional()
          .openapi({ description: "resume after this id (the Last-Event-ID header wins)" }),
      }),
      headers: z.object({ "last-event-id": z.string().optional() }),
    },
    responses: {
      200: {
        description: "An endless text/event-stream; a `: heartbeat` comment every 15 s when quiet",
        content: { "text/event-stream": { schema: z.string() } },
      },
      422: { description: "A filter or Last-Event-ID is malformed" },
      429: { description: "The tenant has too many streams open" },
      501: { description: "Not served here (AWS: use EventBridge)" },
    },
  });
}
