/** A local stand-in could not be installed or did not come up. The message says what to do. */
export class LocalStackError extends Error {
  constructor(
    readonly service: "redis" | "dynamodb" | "sqs",
    message: string,
  ) {
    super(`${service}: ${message}`);
    this.name = "LocalStackError";
  }
}

/** A worker process could not load the handlers module it was given. */
export class WorkerModuleError extends Error {
  constructor(
    readonly module: string,
    reason: string,
  ) {
    super(`worker handlers module ${module}: ${reason}`);
    this.name = "WorkerModuleError";
  }
}

/** A worker process of the local runtime exited before it was ready (the pool's start fails). */
export class WorkerStartError extends Error {
  constructor(
    readonly slot: number,
    readonly exit: string,
  ) {
    super(`worker process ${slot} exited before it was ready (${exit}); see the lines above`);
    this.name = "WorkerStartError";
  }
}
