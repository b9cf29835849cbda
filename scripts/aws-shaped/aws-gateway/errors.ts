/**
 * An error the gateway answers in the service's own wire shape, so the SDK in the function raises
 * what it would raise against AWS. `code` is the modelled error name; `queryCode` is the older
 * awsQuery code that query-compatible JSON services (SQS, CloudWatch) also send in
 * `x-amzn-query-error`, and the code a query-protocol service puts in `<Code>`.
 */
export class AwsFault extends Error {
  readonly queryCode: string;
  readonly fault: "Sender" | "Receiver";
  /** JSON services prefix some errors with a shape namespace (`com.amazon.coral.service#…`). */
  readonly namespace: string | undefined;
  /** AWS writes `Message` in some error bodies and `message` in others; the SDK reads either. */
  readonly messageKey: "message" | "Message";

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: {
      readonly queryCode?: string;
      readonly fault?: "Sender" | "Receiver";
      readonly namespace?: string;
      readonly messageKey?: "message" | "Message";
    } = {},
  ) {
    super(message);
    this.name = "AwsFault";
    this.queryCode = options.queryCode ?? code;
    this.fault = options.fault ?? (status >= 500 ? "Receiver" : "Sender");
    this.namespace = options.namespace;
    this.messageKey = options.messageKey ?? "message";
  }
}

/** The gateway was given options it cannot run with (an endpoint that is not a URL, a port in use). */
export class GatewayConfigError extends Error {
  constructor(
    readonly option: string,
    reason: string,
  ) {
    super(`aws gateway option ${option}: ${reason}`);
    this.name = "GatewayConfigError";
  }
}

/**
 * IAM could not evaluate a call: the simulator rejected the principal's policies or the request
 * (a resource of the wrong type for the action). A fault in the harness or the template, never the
 * function's, so the call fails loudly instead of being quietly allowed or denied.
 */
export class PolicyEvaluationError extends Error {
  constructor(
    readonly principal: string,
    readonly action: string,
    readonly resource: string,
    readonly detail: string,
  ) {
    super(`IAM simulation of ${action} on ${resource} for ${principal} failed: ${detail}`);
    this.name = "PolicyEvaluationError";
  }
}
