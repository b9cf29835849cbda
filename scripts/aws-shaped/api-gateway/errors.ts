import type { GatewayReply } from "./gateway-responses.ts";

/**
 * The `invoke` callback rejects with this when the function did not return a result: it threw
 * (`error`) or ran past its own timeout (`timeout`). Either way API Gateway answers as for any failed
 * integration (502 REST, 500 HTTP API); only the gateway's own integration timeout is a 504/503.
 */
export class InvocationError extends Error {
  constructor(
    readonly kind: "error" | "timeout",
    message: string,
  ) {
    super(message);
    this.name = "InvocationError";
  }
}

/** The caller-keys file cannot be used; `reason` says what is wrong and where. */
export class CallerKeysFileError extends Error {
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`${file}: ${reason}`);
    this.name = "CallerKeysFileError";
  }
}

/** API Gateway refuses the request before the function runs; `reply` is what it answers. */
export class GatewayRefusal extends Error {
  constructor(readonly reply: GatewayReply) {
    super(`${reply.status} ${reply.errorType ?? ""} ${reply.body}`.trim());
    this.name = "GatewayRefusal";
  }
}

/** The function's result is not a proxy response API Gateway can read; `reason` says why. */
export class MalformedResultError extends Error {
  constructor(readonly reason: string) {
    super(`malformed Lambda proxy response: ${reason}`);
    this.name = "MalformedResultError";
  }
}
