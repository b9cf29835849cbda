/**
 * The answers API Gateway gives on its own, byte for byte where the body is known. Sources:
 * - Gateway response types and statuses: developerguide/supported-gateway-response-types.html
 *   (MISSING_AUTHENTICATION_TOKEN 403, INVALID_SIGNATURE 403, EXPIRED_TOKEN 403, UNAUTHORIZED,
 *   INTEGRATION_TIMEOUT 504, INTEGRATION_FAILURE, REQUEST_TOO_LARGE 413).
 * - The SigV4 bodies as deployed APIs return them, quoted in client issues: mhart/aws4#33 and #110
 *   (signature mismatch, with the canonical request and string to sign), mhart/aws4#118 and
 *   aws-amplify/aws-sdk-android#253 (`Signature expired: … (… - 5 min.)` from execute-api).
 * - Lambda failures: REST `{"message": "Internal server error"}` 502 (set-up-lambda-proxy-integrations:
 *   "If the function output is of a different format, API Gateway returns a 502"); HTTP API
 *   `{"message":"Internal Server Error"}` (http-api-troubleshooting-lambda); integration timeouts
 *   REST 504 `Endpoint request timed out`, HTTP API 503 `Service Unavailable` (limits: 29 s / 30 s).
 * REST bodies keep API Gateway's own spacing: its default templates write `{"message": "…"}` for
 * integration errors and `{"message":"…"}` for authentication ones.
 */
import type { ApiKind } from "./types.ts";

export interface GatewayReply {
  readonly status: number;
  /** `x-amzn-ErrorType`; HTTP APIs send none for their generic errors. */
  readonly errorType: string | undefined;
  readonly body: string;
}

const json = (message: string) => JSON.stringify({ message });

/** No `Authorization` header and no presigned query: REST says so; an HTTP API route just forbids. */
export function missingAuthenticationToken(kind: ApiKind): GatewayReply {
  return kind.api === "rest"
    ? {
        status: 403,
        errorType: "MissingAuthenticationTokenException",
        body: json("Missing Authentication Token"),
      }
    : { status: 403, errorType: undefined, body: json("Forbidden") };
}

/** A path outside the REST API's stage, or a missing API key. */
export function forbidden(): GatewayReply {
  return { status: 403, errorType: "ForbiddenException", body: json("Forbidden") };
}

/** The signature's parts cannot be read (a missing `Credential=`, an unparsable header…). */
export function incompleteSignature(message: string): GatewayReply {
  return { status: 403, errorType: "IncompleteSignatureException", body: json(message) };
}

/** The signature was read but does not hold: wrong scope, date outside the window, mismatch. */
export function invalidSignature(message: string): GatewayReply {
  return { status: 403, errorType: "InvalidSignatureException", body: json(message) };
}

/** An access key (or session token) IAM does not know. */
export function unrecognizedClient(): GatewayReply {
  return {
    status: 403,
    errorType: "UnrecognizedClientException",
    body: json("The security token included in the request is invalid."),
  };
}

/** The function failed (error, crash, its own timeout) or returned something that is not a response. */
export function integrationFailure(kind: ApiKind): GatewayReply {
  return kind.api === "rest"
    ? { status: 502, errorType: "InternalServerErrorException", body: '{"message": "Internal server error"}' }
    : { status: 500, errorType: undefined, body: json("Internal Server Error") };
}

/** The gateway stopped waiting (29 s REST, 30 s HTTP API); the function may still be running. */
export function integrationTimeout(kind: ApiKind): GatewayReply {
  return kind.api === "rest"
    ? { status: 504, errorType: undefined, body: '{"message": "Endpoint request timed out"}' }
    : { status: 503, errorType: undefined, body: json("Service Unavailable") };
}

/** A request body over the 10 MB payload quota. */
export function requestTooLarge(kind: ApiKind): GatewayReply {
  return kind.api === "rest"
    ? { status: 413, errorType: undefined, body: json("Request Too Long") }
    : { status: 413, errorType: undefined, body: json("Request Entity Too Large") };
}
