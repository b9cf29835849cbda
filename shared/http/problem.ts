import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type FieldIssue, ValidationError } from "../errors.ts";
import { EventNotFoundError, EventStateConflictError, IdempotencyConflictError } from "../events/errors.ts";
import { RotationOverlapError } from "../handlers/errors.ts";
import { InvalidCursorError, JournalRequiredError } from "../journal/errors.ts";
import { LeaseHeldError, StaleLeaseError } from "../leases/errors.ts";
import {
  InsufficientStockError,
  ReservationConflictError,
  ReservationNotFoundError,
  ReservationStateError,
} from "../ledger/errors.ts";
import { PayloadTooLargeError } from "./errors.ts";
import { serializeEvent } from "./serialize.ts";

/** An RFC 9457 problem document. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail?: string;
  readonly errors?: FieldIssue[];
  readonly [extension: string]: unknown;
}

export function problem(slug: string, title: string, status: number, extra: Partial<Problem> = {}): Problem {
  return { type: `urn:hourglass:problem:${slug}`, title, status, ...extra };
}

export function sendProblem(c: Context, body: Problem): Response {
  return c.body(JSON.stringify(body), body.status as ContentfulStatusCode, {
    "content-type": "application/problem+json",
  });
}

/**
 * Maps domain errors to problems. Anything unknown is a 5xx: by design only a dependency that is
 * down gets there, since every input error is caught as a typed error before it.
 */
export function problemFor(error: unknown): Problem {
  if (error instanceof ValidationError) {
    return error.kind === "malformed"
      ? problem("malformed-request", "The request is malformed", 400, {
          detail: error.message,
          errors: [...error.issues],
        })
      : problem("validation", "The request breaks a rule", 422, {
          detail: error.message,
          errors: [...error.issues],
        });
  }
  if (error instanceof PayloadTooLargeError) {
    return problem("too-large", "A field is too large", 413, {
      detail: error.message,
      errors: [...error.issues],
    });
  }
  if (error instanceof InvalidCursorError) {
    return problem("validation", "The request breaks a rule", 422, {
      detail: error.message,
      errors: [{ path: "cursor", message: error.message }],
    });
  }
  if (error instanceof EventNotFoundError)
    return problem("not-found", "No such event", 404, { detail: error.message });
  if (error instanceof IdempotencyConflictError) {
    return problem("idempotency-conflict", "The id exists with different content", 409, {
      detail: error.message,
      existing: serializeEvent(error.existing),
    });
  }
  if (error instanceof EventStateConflictError) {
    return problem("state-conflict", "Not allowed in the event's current state", 409, {
      detail: error.message,
      currentStatus: error.status,
    });
  }
  if (error instanceof LeaseHeldError) {
    return problem("lease-held", "Someone else holds the lease", 409, {
      detail: error.message,
      owner: error.holder,
      expiresAt: new Date(error.expiresAt).toISOString(),
    });
  }
  if (error instanceof StaleLeaseError) {
    return problem("stale-lease", "Not the current holder of the lease", 409, { detail: error.message });
  }
  if (error instanceof RotationOverlapError) {
    return problem("rotation-overlap", "Too many earlier secrets still sign", 409, {
      detail: error.message,
      retryAt: new Date(error.retryAt).toISOString(),
    });
  }
  if (error instanceof InsufficientStockError) {
    return problem("insufficient-stock", "Not enough stock; nothing was held", 409, {
      detail: error.message,
      shortages: [...error.shortages],
    });
  }
  if (error instanceof ReservationNotFoundError) {
    return problem("not-found", "No such reservation", 404, { detail: error.message });
  }
  if (error instanceof ReservationStateError) {
    return problem("state-conflict", "Not allowed in the reservation's current state", 409, {
      detail: error.message,
      currentStatus: error.status,
    });
  }
  if (error instanceof ReservationConflictError) {
    return problem("idempotency-conflict", "The id exists with different content", 409, {
      detail: error.message,
    });
  }
  // Hono's own 4xx (an empty or unreadable body reaching a validator, for one) keep their status.
  if (error instanceof HTTPException && error.status < 500) {
    return problem("bad-request", "The request is malformed", error.status, { detail: error.message });
  }
  if (error instanceof JournalRequiredError) {
    return problem("not-available", "Not available in this mode", 501, { detail: error.message });
  }
  return problem("dependency-failure", "A dependency failed", 503, {
    detail: "Hourglass could not reach Redis, DynamoDB or SQS; retry with backoff",
  });
}
