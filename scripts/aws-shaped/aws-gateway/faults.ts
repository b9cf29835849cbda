import { AwsFault } from "./errors.ts";
import type { Protocol } from "./protocols.ts";
import { SERVICES, type ServiceName } from "./services.ts";
import type { Decision } from "./types.ts";

/**
 * The errors the gateway itself raises, shaped per service and protocol as AWS sends them. The
 * access-denied shapes follow responses captured from AWS (SQS over JSON: 403, `__type`
 * `com.amazon.coral.service#AccessDeniedException`, `x-amzn-query-error: AccessDenied;Sender`, a
 * `Message` key and the action lower-cased; Lambda: 403 with `x-amzn-ErrorType`; DynamoDB: 400).
 */

const CORAL = "com.amazon.coral.service";
const INVALID_TOKEN = "The security token included in the request is invalid.";

/** The session a Lambda function's calls are made as: its role, assumed, named after the function. */
export function sessionArn(roleArn: string, sessionName: string): string {
  const role = /^arn:(aws[a-z-]*):iam::(\d{12}):role\/(?:.*\/)?([^/]+)$/.exec(roleArn);
  if (!role) return roleArn;
  return `arn:${role[1]}:sts::${role[2]}:assumed-role/${role[3]}/${sessionName}`;
}

export function accessDenied(
  service: ServiceName,
  protocol: Protocol,
  who: string,
  action: string,
  resource: string,
  decision: Exclude<Decision, "Allowed">,
): AwsFault {
  // SQS names the action in lower case in its message ("sqs:sendmessage"); the others as written.
  const named = service === "sqs" ? action.toLowerCase() : action;
  const why =
    decision === "ExplicitlyDenied"
      ? "with an explicit deny in an identity-based policy"
      : `because no identity-based policy allows the ${named} action`;
  const message = `User: ${who} is not authorized to perform: ${named} on resource: ${resource} ${why}`;
  const json = SERVICES[service].json;
  switch (protocol.kind) {
    case "json":
      return new AwsFault(json?.deniedStatus ?? 400, "AccessDeniedException", message, {
        queryCode: "AccessDenied",
        namespace: json?.coralNamespace ? CORAL : undefined,
        messageKey: "Message",
      });
    case "rest-json":
      return new AwsFault(403, "AccessDeniedException", message, { messageKey: "Message" });
    case "query":
      return new AwsFault(403, "AccessDenied", message);
  }
}

export function unrecognizedClient(protocol: Protocol): AwsFault {
  switch (protocol.kind) {
    case "json":
      return protocol.queryCompatible
        ? new AwsFault(403, "UnrecognizedClientException", INVALID_TOKEN, {
            queryCode: "InvalidClientTokenId",
            namespace: CORAL,
          })
        : new AwsFault(400, "UnrecognizedClientException", INVALID_TOKEN, { namespace: CORAL });
    case "rest-json":
      return new AwsFault(403, "UnrecognizedClientException", INVALID_TOKEN, { messageKey: "Message" });
    case "query":
      return new AwsFault(403, "InvalidClientTokenId", INVALID_TOKEN);
  }
}

export function missingAuthentication(protocol: Protocol): AwsFault {
  return protocol.kind === "query"
    ? new AwsFault(403, "MissingAuthenticationToken", "Request is missing Authentication Token")
    : new AwsFault(403, "MissingAuthenticationTokenException", "Missing Authentication Token", {
        queryCode: "MissingAuthenticationToken",
      });
}

/** A service or operation the gateway does not stand in for: said plainly, so the gap is found. */
export function unsupported(protocol: Protocol, what: string): AwsFault {
  const message = `the AWS-shaped gateway does not serve ${what}`;
  return protocol.kind === "query"
    ? new AwsFault(400, "InvalidAction", message)
    : new AwsFault(400, "UnknownOperationException", message, {
        queryCode: "InvalidAction",
        namespace: protocol.kind === "json" ? CORAL : undefined,
      });
}

export function invalidRequest(protocol: Protocol, message: string): AwsFault {
  return protocol.kind === "query"
    ? new AwsFault(400, "ValidationError", message)
    : protocol.kind === "json"
      ? new AwsFault(400, "SerializationException", message, { namespace: CORAL })
      : new AwsFault(400, "ValidationException", message);
}

export function internalFailure(message: string): AwsFault {
  return new AwsFault(500, "InternalFailure", message);
}
