import type { IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { invalidRequest, unsupported } from "./faults.ts";
import type { Protocol } from "./protocols.ts";
import type { ServiceName } from "./services.ts";

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
  readonly headers: IncomingHttpHeaders;
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
    headers: request.headers,
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
        Name: decodeURIComponent(name),
        GroupName: request.query.get("groupName") ?? "default",
      });
    }
    if (name !== undefined && request.method === "PUT") {
      const body = jsonObject(protocol, decoded(protocol, request));
      return call("UpdateSchedule", { ...body, Name: decodeURIComponent(name) });
    }
  }
  if (service === "lambda") {
    const name = INVOKE_PATH.exec(request.path)?.[1];
    if (name !== undefined && request.method === "POST") {
      return call("Invoke", {
        FunctionName: decodeURIComponent(name),
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
