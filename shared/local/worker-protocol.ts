/**
 * The few messages a `WorkerPool` and its worker processes exchange over the IPC channel. Anything
 * else a worker sends (the benchmark's samples) is handed to the pool's `onMessage`.
 */
export const READY = "hourglass-worker:ready";
export const STOP = "hourglass-worker:stop";

/** Where `npm start`'s worker processes take their settings from (argv of `worker-main.ts`). */
export interface WorkerMainArgs {
  /** Path of a module that exports `handlers` (the user's, as functions/handlers.ts does). */
  readonly handlersModule: string;
  readonly pollers: number;
  readonly maxInFlight: number;
}

export function encodeMainArgs(args: WorkerMainArgs): string[] {
  return [args.handlersModule, String(args.pollers), String(args.maxInFlight)];
}

export function decodeMainArgs(argv: readonly string[]): WorkerMainArgs {
  const [handlersModule = "", pollers, maxInFlight] = argv;
  return { handlersModule, pollers: Number(pollers), maxInFlight: Number(maxInFlight) };
}
