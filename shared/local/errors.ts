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
