/**
 * Thrown by a handler when retrying cannot help (a 4xx from a webhook, a payload the handler
 * rejects): the event goes straight to the dead letters. Any other error is retried.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NonRetryableError";
  }
}

/**
 * A webhook URL resolves to an address (or names a port) the configuration does not allow. The
 * message, which becomes the event's `lastError`, names the host and the rule but never the
 * resolved address: that would let a tenant map the internal network through DNS names.
 */
export class ForbiddenAddressError extends NonRetryableError {
  constructor(
    readonly host: string,
    /** For operators' logs only; not in the message. */
    readonly address: string,
    readonly reason: string,
  ) {
    super(`webhook host ${host} is not allowed: ${reason}`);
    this.name = "ForbiddenAddressError";
  }
}

/**
 * A webhook request failed before an answer (refused, reset, timed out, DNS). Retried. Node's own
 * messages name the resolved address and port (`connect ECONNREFUSED 10.0.3.17:443`), so the
 * message keeps only the host from the URL and the error code.
 */
export class WebhookRequestError extends Error {
  constructor(
    readonly host: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(`webhook request to ${host} failed: ${code}`, options);
    this.name = "WebhookRequestError";
  }

  static from(url: URL, error: unknown): WebhookRequestError {
    const code =
      error instanceof Error
        ? error.name === "AbortError" || error.name === "TimeoutError"
          ? "timed out"
          : ((error as NodeJS.ErrnoException).code ?? error.name)
        : "unknown error";
    return new WebhookRequestError(url.host, code, { cause: error });
  }
}

/**
 * Something the platform itself needs to run a handler failed, not the handler's work: the
 * tenant's signing state could not be read because DynamoDB did not answer. The worker retries the
 * event with backoff and gives the attempt back, so an outage of Hourglass's own storage never
 * turns a healthy receiver's event into a dead letter (found by the chaos soak, seed 6).
 */
export class DependencyUnavailableError extends Error {
  /** When trying again is worth it, if the dependency can tell: the retry waits at least this. */
  readonly retryAfterMs: number | undefined;

  constructor(
    readonly dependency: string,
    options?: { cause?: unknown; retryAfterMs?: number },
  ) {
    super(`${dependency} is unavailable; the attempt is not counted`, options);
    this.name = "DependencyUnavailableError";
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * Every one of this worker's request slots to the webhook's origin is taken by this tenant's
 * requests, and the turn would not come while the attempt could still give the receiver its whole
 * timeout (`webhook-slots.ts`). Waiting for a slot is the platform's own pacing, so the attempt is
 * not counted: retried once the requests ahead should be done (`retryAfterMs`), as when a
 * dependency is down. A receiver that hangs still spends the attempts of the requests it holds.
 */
export class WebhookSlotsBusyError extends DependencyUnavailableError {
  constructor(
    readonly origin: string,
    readonly slots: number,
    readonly waitedMs: number,
    retryAfterMs: number,
  ) {
    super(`a webhook request slot to ${origin}`, { retryAfterMs });
    this.message = `all ${slots} of this tenant's webhook request slots to ${origin} are busy (waited ${Math.round(Math.max(0, waitedMs))} ms, about ${Math.round(retryAfterMs)} ms of requests ahead); the attempt is not counted`;
    this.name = "WebhookSlotsBusyError";
  }
}

/** Registering the same event type twice is a programming error, found at startup. */
export class DuplicateHandlerError extends Error {
  constructor(readonly type: string) {
    super(`a handler for event type "${type}" is already registered`);
    this.name = "DuplicateHandlerError";
  }
}

/** A rotation while the most earlier secrets allowed still sign: nothing was changed. */
export class RotationOverlapError extends Error {
  constructor(
    readonly tenant: string,
    readonly overlapping: number,
    /** When the earliest of them stops signing, so a rotation fits again. */
    readonly retryAt: number,
  ) {
    super(
      `${overlapping} earlier secrets are still in their overlap; rotate again after ${new Date(retryAt).toISOString()}`,
    );
    this.name = "RotationOverlapError";
  }
}
