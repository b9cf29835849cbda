import type { z } from "zod";
import type { Logger } from "../logger.ts";
import { DuplicateHandlerError } from "./errors.ts";

export interface HandlerContext {
  readonly id: string;
  readonly tenant: string;
  /** 1 on the first attempt. */
  readonly attempt: number;
  readonly runAt: Date;
  readonly logger: Logger;
  /** On a recurring schedule's occurrence: the schedule's id and the occurrence's instant. */
  readonly scheduleId?: string;
  readonly occurrenceAt?: Date;
  /** Aborted at the handler's deadline; pass it to fetch and friends. */
  readonly signal: AbortSignal;
  /**
   * Milliseconds left until the worker ends this attempt (`signal` aborts then), as Lambda's
   * `getRemainingTimeInMillis`: the attempt has the least of the handler's `timeoutMs`, the
   * worker's HOURGLASS_HANDLER_TIMEOUT_SECONDS and what the Lambda invocation has left.
   */
  remainingMs(): number;
}

export interface HandlerOptions {
  /** Upper bound for one attempt. @default the worker's HOURGLASS_HANDLER_TIMEOUT_SECONDS */
  readonly timeoutMs?: number;
  /** Internal types (such as `reservation.expire`) cannot be scheduled through the public API. */
  readonly internal?: boolean;
}

export interface HandlerDefinition<S extends z.ZodType = z.ZodType> {
  readonly type: string;
  readonly schema: S;
  readonly options: HandlerOptions;
  run(payload: z.output<S>, context: HandlerContext): Promise<void>;
}

/**
 * Declares what runs for one event type. The payload is validated with `schema` when the event is
 * scheduled and again before the handler runs. Return means success; throw means retry; throw a
 * `NonRetryableError` to send the event straight to the dead letters.
 */
export function defineHandler<S extends z.ZodType>(
  type: string,
  schema: S,
  run: (payload: z.output<S>, context: HandlerContext) => Promise<void>,
  options: HandlerOptions = {},
): HandlerDefinition<S> {
  return { type, schema, options, run };
}

export class HandlerRegistry {
  private readonly handlers = new Map<string, HandlerDefinition>();

  constructor(definitions: readonly HandlerDefinition[] = []) {
    for (const definition of definitions) this.register(definition);
  }

  register(definition: HandlerDefinition): this {
    if (this.handlers.has(definition.type)) throw new DuplicateHandlerError(definition.type);
    this.handlers.set(definition.type, definition as HandlerDefinition);
    return this;
  }

  get(type: string): HandlerDefinition | undefined {
    return this.handlers.get(type);
  }

  /** Types a client may schedule. */
  publicTypes(): string[] {
    return [...this.handlers.values()].filter((h) => !h.options.internal).map((h) => h.type);
  }
}
