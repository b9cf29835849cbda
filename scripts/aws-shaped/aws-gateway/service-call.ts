import type { IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { invalidRequest, unsupported } from "./faults.ts";
import type { Protocol, Reply } from "./protocols.ts";
import type { ServiceName } from "./services.ts";
import type { GatewayPrincipal } from "./types.ts";

/**
 * Reading a request: who signed it and for which service, then which operation it calls with what,
 * and the shape of the operations that answer it.
 */

/**
 * Who is calling, and which service they signed for, read from the SigV4 credential scope
 * (`Credential=AKID/20261205/us-east-1/dynamodb/aws4_request`). The signature itself is not checked:
 * every caller is one of the harness's own functions, and the scope is all IAM needs to know who.
 */
export interface CredentialScope {
  readonly accessKeyId: string;
  readonly date: string;
  readonly region: string;
  /** The signing name: "dynamodb", "sqs", "monitoring" (CloudWatch), "events" (EventBridge), … */
  readonly service: string;
}

const SCOPE = /^([^/\s,]+)\/(\d{8})\/([^/\s,]+)\/([^/\s,]+)\/aws4_request$/;
const HEADER_CREDENTIAL = /Credential=([^,\s]+)/;

/** The scope from the `Authorization` header, or from `X-Amz-Credential` of a presigned URL. */
export function credentialScope(
  authorization: string | undefined,
  query: URLSearchParams,
): CredentialScope | undefined {
  const credential = authorization
    ? HEADER_CREDENTIAL.exec(authorization)?.[1]
    : (query.get("X-Amz-Credential") ?? undefined);
  if (!credential) return undefined;
  const [, accessKeyId, date, region, service] = SCOPE.exec(credential) ?? [];
  if (!accessKeyId || !date || !region || !service) return undefined;
  return { accessKeyId, date, region, service };
}

/**
 * One API call as the gateway understands it: the operation and its parameters, whichever protocol
 * carried them. The raw body is kept as received, for forwarding byte for byte and for a Lambda
 * payload.
 */
export interface ServiceCall {
  readonly service: ServiceName;
  readonly protocol: Protocol;
  readonly operation: string;
  readonly input: Readonly<Record<string, unknown>>;
  readonly body: Buffer;
}

export interface RawRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

const SCHEDULE_PATH = /^\/schedules\/([^/]+)$/;
const INVOKE_PATH = /^\/2015-03-31\/functions\/([^/]+)\/invocations$/;

export function readServiceCall(service: ServiceName, protocol: Protocol, request: RawRequest): ServiceCall {
  const call = (operation: string, input: Record<string, unknown>): ServiceCall => ({
    service,
    protocol,
    operation,
    input,
    body: request.body,
  });
  switch (protocol.kind) {
    case "json": {
      const target = String(request.headers["x-amz-target"] ?? "");
      return call(
        target.slice(target.lastIndexOf(".") + 1),
        jsonObject(protocol, decoded(protocol, request)),
      );
    }
    case "query": {
      const form = new URLSearchParams(decoded(protocol, request).toString("utf8"));
      for (const [key, value] of request.query) if (!form.has(key)) form.set(key, value);
      const action = form.get("Action");
      if (!action) throw invalidRequest(protocol, "the query request names no Action");
      // An SQS query call may be posted to the queue's own URL instead of naming it in the form.
      if (service === "sqs" && !form.has("QueueUrl") && request.path !== "/")
        form.set("QueueUrl", request.path);
      return call(action, Object.fromEntries(form));
    }
    case "rest-json":
      return restCall(service, protocol, request, call);
  }
}

/** A name from a REST path; a malformed escape is the caller's 400, as AWS answers it, never a 500. */
function pathName(protocol: Protocol, raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw invalidRequest(protocol, `malformed percent-encoding in the path: ${raw}`);
  }
}

function restCall(
  service: ServiceName,
  protocol: Protocol,
  request: RawRequest,
  call: (operation: string, input: Record<string, unknown>) => ServiceCall,
): ServiceCall {
  if (service === "scheduler") {
    const name = SCHEDULE_PATH.exec(request.path)?.[1];
    if (name !== undefined && request.method === "GET") {
      return call("GetSchedule", {
        Name: pathName(protocol, name),
        GroupName: request.query.get("groupName") ?? "default",
      });
    }
    if (name !== undefined && request.method === "PUT") {
      const body = jsonObject(protocol, decoded(protocol, request));
      return call("UpdateSchedule", { ...body, Name: pathName(protocol, name) });
    }
  }
  if (service === "lambda") {
    const name = INVOKE_PATH.exec(request.path)?.[1];
    if (name !== undefined && request.method === "POST") {
      return call("Invoke", {
        FunctionName: pathName(protocol, name),
        Qualifier: request.query.get("Qualifier") ?? undefined,
        InvocationType: String(request.headers["x-amz-invocation-type"] ?? "RequestResponse"),
      });
    }
  }
  throw unsupported(protocol, `${service} ${request.method} ${request.path}`);
}

/** The body as the service would read it: SDKs gzip some requests (PutMetricData) past a size. */
function decoded(protocol: Protocol, request: RawRequest): Buffer {
  const encoding = String(request.headers["content-encoding"] ?? "");
  if (!encoding.includes("gzip")) return request.body;
  try {
    return gunzipSync(request.body);
  } catch (error) {
    throw invalidRequest(protocol, `the gzip request body does not inflate: ${(error as Error).message}`);
  }
}

function jsonObject(protocol: Protocol, body: Buffer): Record<string, unknown> {
  if (body.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw invalidRequest(protocol, `the request body is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw invalidRequest(protocol, "the request body is not a JSON object");
  }
  return parsed as Record<string, unknown>;
}

/**
 * A service the gateway answers itself instead of forwarding: its operations by name. An operation
 * runs only after IAM allowed the call, and answers in the call's protocol or throws an AwsFault.
 */
export type LocalOperation = (call: ServiceCall, caller: GatewayPrincipal) => Reply | Promise<Reply>;

export type LocalService = Readonly<Record<string, LocalOperation>>;
