import type { InvokeCommand } from "@aws-sdk/client-lambda";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../shared/config.ts";
import { NonRetryableError } from "../../shared/handlers/errors.ts";
import { lambdaTarget } from "../../shared/handlers/lambda-target.ts";
import { silentLogger } from "../../shared/logger.ts";

/** The handler that runs an event type in a user's Lambda function, against a scripted Lambda client. */
function fakeLambda(reply: { FunctionError?: string; Payload?: unknown }) {
  const calls: { FunctionName?: string; event: unknown }[] = [];
  const client = {
    async send(command: InvokeCommand) {
      calls.push({
        FunctionName: command.input.FunctionName,
        event: JSON.parse(new TextDecoder().decode(command.input.Payload as Uint8Array)),
      });
      return {
        FunctionError: reply.FunctionError,
        Payload:
          reply.Payload === undefined ? undefined : new TextEncoder().encode(JSON.stringify(reply.Payload)),
      };
    },
  };
  return { client: client as never, calls };
}

const context = {
  id: "evt-1",
  tenant: "acme",
  attempt: 2,
  runAt: new Date("2027-01-01T00:00:00Z"),
  logger: silentLogger,
  signal: new AbortController().signal,
  remainingMs: () => 60_000,
};

describe("lambdaTarget", () => {
  it("invokes the function with the payload and the attempt's context", async () => {
    const { client, calls } = fakeLambda({});
    await lambdaTarget("invoice.remind", "remind-fn", client).run({ invoiceId: 7 }, context);
    expect(calls).toEqual([
      {
        FunctionName: "remind-fn",
        event: {
          id: "evt-1",
          tenant: "acme",
          attempt: 2,
          runAt: "2027-01-01T00:00:00.000Z",
          payload: { invoiceId: 7 },
        },
      },
    ]);
  });

  it("retries a function error, and dead-letters one of type NonRetryableError", async () => {
    const failing = fakeLambda({
      FunctionError: "Unhandled",
      Payload: { errorType: "Error", errorMessage: "db down" },
    });
    const retried = await lambdaTarget("t", "fn", failing.client)
      .run({}, context)
      .catch((e: unknown) => e);
    expect(retried).toBeInstanceOf(Error);
    expect(retried).not.toBeInstanceOf(NonRetryableError);
    expect((retried as Error).message).toContain("db down");
    const fatal = fakeLambda({
      FunctionError: "Unhandled",
      Payload: { errorType: "NonRetryableError", errorMessage: "no such invoice" },
    });
    expect(
      await lambdaTarget("t", "fn", fatal.client)
        .run({}, context)
        .catch((e: unknown) => e),
    ).toBeInstanceOf(NonRetryableError);
  });

  it("is configured by HOURGLASS_LAMBDA_TARGETS, and a bad value names the variable", () => {
    const config = loadConfig({
      HOURGLASS_LAMBDA_TARGETS: JSON.stringify({
        "invoice.remind": "arn:aws:lambda:eu-west-1:123456789012:function:remind",
      }),
    });
    expect(config.lambdaTargets["invoice.remind"]).toContain(":function:remind");
    expect(() => loadConfig({ HOURGLASS_LAMBDA_TARGETS: "{not json" })).toThrow(ConfigError);
    expect(() => loadConfig({ HOURGLASS_LAMBDA_TARGETS: JSON.stringify({ "Bad Type": "fn" }) })).toThrow(
      /HOURGLASS_LAMBDA_TARGETS/,
    );
  });
});
