import type { HandlerDefinition } from "../shared/handlers/registry.ts";

/**
 * Your event types. Both the API (to validate payloads when events are scheduled) and the worker
 * (to run them) load this list; the built-in `webhook` type is always registered. Add handlers
 * made with `defineHandler(type, schema, fn)` from `shared/handlers/registry.ts`.
 */
export const handlers: HandlerDefinition[] = [];
