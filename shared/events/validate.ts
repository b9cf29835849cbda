import { createHash } from "node:crypto";
import type { z } from "zod";
import type { HandlerRegistry } from "../handlers/registry.ts";
import type { NewEvent } from "../model/event.ts";
import { EventValidationError, type FieldIssue } from "./errors.ts";
import { runAtProblem } from "./run-at.ts";
import { type RescheduleInput, rescheduleInput, type ScheduleInput, scheduleInput } from "./schema.ts";

export interface ValidationRules {
  readonly registry: HandlerRegistry;
  readonly horizonMs: number;
  /** Internal callers (the reservation ledger) may schedule internal types. */
  readonly allowInternal: boolean;
  readonly newId: () => string;
}

/** Turns zod issues into field issues with JSON paths under `prefix`. */
export function fieldIssues(error: z.ZodError, prefix = ""): FieldIssue[] {
  return error.issues.map((issue) => ({
    path: [prefix, ...issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))]
      .join("")
      .replace(/^\./, ""),
    message: issue.message,
  }));
}

/** Resolves `runAt | delaySeconds` to epoch ms, enforcing "exactly one", the bounds and the horizon. */
export function resolveRunAt(
  input: { runAt?: string | undefined; delaySeconds?: number | undefined },
  now: number,
  horizonMs: number,
  prefix = "",
): number {
  const at = (field: string) => (prefix ? `${prefix}.${field}` : field);
  if (input.runAt !== undefined && input.delaySeconds !== undefined) {
    throw new EventValidationError([{ path: at("runAt"), message: "give runAt or delaySeconds, not both" }]);
  }
  if (input.runAt === undefined && input.delaySeconds === undefined) {
    throw new EventValidationError([{ path: at("runAt"), message: "runAt or delaySeconds is required" }]);
  }
  const runAt =
    input.runAt !== undefined ? Date.parse(input.runAt) : now + Math.round(input.delaySeconds! * 1000);
  const problem = runAtProblem(runAt);
  if (problem !== undefined) {
    throw new EventValidationError([
      { path: at(input.runAt !== undefined ? "runAt" : "delaySeconds"), message: problem },
    ]);
  }
  if (runAt - now > horizonMs) {
    const days = Math.round(horizonMs / 86_400_000);
    throw new EventValidationError([
      {
        path: at(input.runAt !== undefined ? "runAt" : "delaySeconds"),
        message: `more than ${days} days ahead`,
      },
    ]);
  }
  return runAt;
}

/** Validates one event and turns it into what the engine stores. Throws EventValidationError. */
export function toNewEvent(
  raw: unknown,
  tenant: string,
  now: number,
  rules: ValidationRules,
  prefix = "",
): NewEvent {
  const parsed = scheduleInput.safeParse(raw);
  if (!parsed.success) throw new EventValidationError(fieldIssues(parsed.error, prefix));
  const input = parsed.data;
  const at = (field: string) => (prefix ? `${prefix}.${field}` : field);
  const handler = rules.registry.get(input.type);
  if (!handler || (handler.options.internal && !rules.allowInternal)) {
    throw new EventValidationError([{ path: at("type"), message: `unknown event type "${input.type}"` }]);
  }
  const payload = handler.schema.safeParse(input.payload);
  if (!payload.success) throw new EventValidationError(fieldIssues(payload.error, at("payload")));
  const runAt = resolveRunAt(input, now, rules.horizonMs, prefix);
  return {
    tenant,
    id: input.id ?? rules.newId(),
    type: input.type,
    payload: input.payload,
    runAt,
    maxAttempts: input.maxAttempts,
    backoff: input.backoff,
    ...(input.callbacks && { callbacks: input.callbacks }),
    // A generated id cannot be sent twice, so only a client's id needs its content remembered.
    fingerprint: input.id === undefined ? "" : fingerprint(input),
    createdAt: now,
    ...(input.id === undefined && { generatedId: true as const }),
  };
}

export function parseReschedule(raw: unknown, now: number, horizonMs: number): number {
  const parsed = rescheduleInput.safeParse(raw);
  if (!parsed.success) throw new EventValidationError(fieldIssues(parsed.error));
  return resolveRunAt(parsed.data as RescheduleInput, now, horizonMs);
}

/**
 * What makes two requests "the same event": type, payload, schedule as asked (an absolute runAt,
 * or the delay itself, since a relative delay resolves to a different time on each retry), and
 * the retry policy. Keys are sorted so property order does not matter.
 */
function fingerprint(input: z.output<typeof scheduleInput> & ScheduleInput): string {
  const schedule =
    input.runAt !== undefined ? { at: Date.parse(input.runAt) } : { delay: input.delaySeconds };
  return fingerprintOf([
    input.type,
    input.payload,
    schedule,
    input.maxAttempts ?? null,
    input.backoff ?? null,
    // Appended only when given, so events scheduled before callbacks existed keep their fingerprint.
    ...(input.callbacks ? [input.callbacks] : []),
  ]);
}

/**
 * A hash of a JSON value that property order and undefined properties do not change (keys
 * sorted): how events and schedules tell a repeated request from a different one under one id.
 */
export function fingerprintOf(value: unknown): string {
  return createHash("sha256").update(stableJson(value)).digest("base64url");
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
