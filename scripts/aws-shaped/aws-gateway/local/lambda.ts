import { functionArn } from "../authorizations.ts";
import { AwsFault } from "../errors.ts";
import type { LocalService } from "../service-call.ts";
import type { LambdaInvocationResult } from "../types.ts";

type Invoke = (functionArn: string, payload: Uint8Array) => Promise<LambdaInvocationResult>;

/**
 * Lambda's Invoke, handed to the harness's callback (which runs the function as the process host
 * does). Without one every function is missing, as in an account that has none. `Event` calls are
 * accepted at once and run behind the answer; `DryRun` only checks, as on AWS.
 */
export function lambda(invoke: Invoke | undefined, region: string, accountId: string): LocalService {
  return {
    Invoke: async (call) => {
      const arn = functionArn(
        String(call.input.FunctionName ?? ""),
        String(call.input.Qualifier ?? ""),
        region,
        accountId,
      );
      if (!invoke) {
        throw new AwsFault(404, "ResourceNotFoundException", `Function not found: ${arn}`, {
          messageKey: "Message",
        });
      }
      const headers = { "content-type": "application/json", "x-amz-executed-version": "$LATEST" };
      switch (call.input.InvocationType) {
        case "DryRun":
          return { status: 204, headers, body: "" };
        case "Event":
          // The caller is not told how it went, on AWS either; a failure must not go unhandled here.
          invoke(arn, call.body).catch(() => {});
          return { status: 202, headers, body: "" };
        default: {
          let result: LambdaInvocationResult;
          try {
            result = await invoke(arn, call.body);
          } catch (error) {
            throw new AwsFault(
              500,
              "ServiceException",
              `invoking ${arn} failed: ${(error as Error).message}`,
              {
                messageKey: "Message",
              },
            );
          }
          return {
            status: result.statusCode,
            headers: result.functionError
              ? { ...headers, "x-amz-function-error": result.functionError }
              : headers,
            body: result.payload,
          };
        }
      }
    },
  };
}
