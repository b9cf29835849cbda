import { InvokeCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import { z } from "zod";
import { NonRetryableError } from "./errors.ts";
import { defineHandler } from "./registry.ts";

/** What the invoked function receives: the payload and the context of this attempt. */
export interface LambdaTargetEvent {
  readonly id: string;
  readonly tenant: string;
  readonly attempt: number;
  readonly runAt: string;
  readonly payload: unknown;
}

/**
 * An event type whose handler is a Lambda function of yours, invoked synchronously. Returning is
 * success; throwing is a retry, except an error whose `errorType` is `NonRetryableError`, which
 * sends the event straight to the dead letters. The payload is any JSON: the function validates it.
 */
export function lambdaTarget(type: string, functionName: string, client: Pick<LambdaClient, "send">) {
  return defineHandler(type, z.unknown(), async (payload, context) => {
    const event: LambdaTargetEvent = {
      id: context.id,
      tenant: context.tenant,
      attempt: context.attempt,
      runAt: context.runAt.toISOString(),
      payload,
    };
    const reply = await client.send(
      new InvokeCommand({
        FunctionName: functionName,
        Payload: new TextEncoder().encode(JSON.stringify(event)),
      }),
      { abortSignal: context.signal },
    );
    if (!reply.FunctionError) return;
    const text = reply.Payload ? new TextDecoder().decode(reply.Payload) : "";
    let error: { errorType?: string; errorMessage?: string } = {};
    try {
      error = JSON.parse(text) as typeof error;
    } catch {
      error = { errorMessage: text };
    }
    const message =
      `${functionName} failed: ${error.errorType ?? reply.FunctionError}: ${error.errorMessage ?? ""}`.trim();
    if (error.errorType === "NonRetryableError") throw new NonRetryableError(message);
    throw new Error(message);
  });
}
