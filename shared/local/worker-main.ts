import { isAbsolute } from "node:path";
import { pathToFileURL } from "node:url";
import type { HandlerDefinition } from "../handlers/registry.ts";
import { WorkerModuleError } from "./errors.ts";
import { runWorkerProcess } from "./worker-process.ts";
import { decodeMainArgs } from "./worker-protocol.ts";

/**
 * Entry of `npm start`'s worker processes (forked by `WorkerPool`, see `startRuntime`):
 * `worker-main.ts HANDLERS_MODULE POLLERS MAX_IN_FLIGHT`. The handlers are the API's own, loaded
 * here by path: a process cannot be handed functions, only where they live.
 */
const { handlersModule, pollers, maxInFlight } = decodeMainArgs(process.argv.slice(2));
if (!isAbsolute(handlersModule)) throw new WorkerModuleError(handlersModule, "an absolute path is required");
const loaded = (await import(pathToFileURL(handlersModule).href)) as { handlers?: unknown };
if (!Array.isArray(loaded.handlers))
  throw new WorkerModuleError(handlersModule, "it exports no `handlers` array");
await runWorkerProcess({
  handlers: loaded.handlers as HandlerDefinition[],
  pollers,
  maxInFlight,
});
