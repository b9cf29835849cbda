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

/** A webhook URL resolves to an address the configuration does not allow. */
export class ForbiddenAddressError extends NonRetryableError {
  constructor(
    readonly host: string,
    readonly address: string,
    readonly reason: string,
  ) {
    super(`webhook host ${host} resolves to ${address} (${reason}), which is not allowed`);
    this.name = "ForbiddenAddressError";
  }
}

/** Registering the same event type twice is a programming error, found at startup. */
export class DuplicateHandlerError extends Error {
  constructor(readonly type: string) {
    super(`a handler for event type "${type}" is already registered`);
    this.name = "DuplicateHandlerError";
  }
}
