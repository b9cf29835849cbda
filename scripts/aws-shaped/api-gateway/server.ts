/**
 * The API Gateway stand-in: real HTTP on 127.0.0.1, each request authorized as `AWS_IAM` authorization
 * does (signature.ts), turned into the proxy event of the API's kind (events.ts), handed to `invoke`
 * (the API Lambda), and its result turned back into the response (results.ts). Responses are whole:
 * these integrations buffer, so a stream (SSE) never reaches the client, as on AWS.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { GatewayRefusal, MalformedResultError } from "./errors.ts";
import type { ProxyEvent } from "./event-types.ts";
import { httpV1Event, httpV2Event, type RequestContextFacts, restEvent } from "./events.ts";
import {
  forbidden,
  type GatewayReply,
  integrationFailure,
  integrationTimeout,
  missingAuthenticationToken,
  requestTooLarge,
} from "./gateway-responses.ts";
import { BodyTooLargeError, headerValue, type ReceivedRequest, readRequest } from "./request.ts";
import { toResponse } from "./results.ts";
import { SignatureVerifier } from "./signature.ts";
import { readClaim } from "./sigv4-claim.ts";
import type { ApiGateway, ApiGatewayOptions } from "./types.ts";

/** API Gateway's integration timeouts: REST up to 29 s, HTTP APIs 30 s (developerguide/limits.html). */
const DEFAULT_TIMEOUT_MS = { rest: 29_000, http: 30_000 } as const;

export async function startApiGateway(options: ApiGatewayOptions): Promise<ApiGateway> {
  const verifier = new SignatureVerifier(
    options.region,
    options.accountId,
    options.keys,
    options.unknownKeys,
  );
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS[options.kind.api];
  const server = createServer((req, res) => {
    void serve(req, res).catch((error: unknown) => {
      // Only writing the response can fail here; the client has gone or the socket broke.
      process.stderr.write(`[api-gateway] could not answer ${req.method} ${req.url}: ${String(error)}\n`);
      res.destroy();
    });
  });

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const ids = requestIds(options.kind.api);
    const send = (reply: GatewayReply) => sendReply(res, options, ids, reply);
    const path = pathWithinStage(req.url ?? "/", options);
    if (path === undefined) return send(forbidden());
    let request: ReceivedRequest;
    try {
      request = await readRequest(req);
    } catch (error) {
      if (!(error instanceof BodyTooLargeError)) throw error;
      res.setHeader("Connection", "close");
      return send(requestTooLarge(options.kind));
    }
    const now = new Date();
    let facts: RequestContextFacts;
    try {
      const claim = readClaim(request);
      if (!claim) return send(missingAuthenticationToken(options.kind));
      const caller = await verifier.verify(request, claim, now);
      const apiKey = headerValue(request, "x-api-key");
      if (options.kind.api === "rest" && options.kind.apiKeys && !apiKey) return send(forbidden());
      facts = {
        caller,
        accountId: options.accountId,
        apiId: options.apiId,
        domainName:
          headerValue(request, "host") ?? `${options.apiId}.execute-api.${options.region}.amazonaws.com`,
        port: req.socket.localPort ?? 0,
        ...ids,
        now,
        apiKey: options.kind.api === "rest" && options.kind.apiKeys ? apiKey : undefined,
      };
    } catch (error) {
      if (error instanceof GatewayRefusal) return send(error.reply);
      throw error;
    }
    const event = eventFor(options, request, facts, path);
    const outcome = await invokeWithin(options.invoke, event, timeoutMs);
    if (outcome.kind === "timeout") return send(integrationTimeout(options.kind));
    if (outcome.kind === "failed") return send(integrationFailure(options.kind));
    try {
      const response = toResponse(options.kind, outcome.result, headerValue(request, "accept"));
      res.statusCode = response.status;
      for (const [name, value] of response.headers) res.appendHeader(name, value);
      for (const [name, value] of gatewayHeaders(options, ids)) res.setHeader(name, value);
      res.setHeader("Content-Length", response.body.length);
      res.end(response.body);
    } catch (error) {
      // A malformed result, or a header Node will not write (a newline in a value): both are 5xx on AWS.
      if (!(error instanceof MalformedResultError) && !(error instanceof TypeError)) throw error;
      for (const name of res.getHeaderNames()) res.removeHeader(name);
      send(integrationFailure(options.kind));
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}/`;
  return {
    url: options.kind.api === "rest" ? `${base}${options.kind.stage}/` : base,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/**
 * REST APIs answer under `/<stage>` only; `/<stage>` itself is the root resource (`ANY /`). Anything
 * else is a stage that does not exist, which API Gateway forbids before any authorization.
 */
function pathWithinStage(target: string, options: ApiGatewayOptions): string | undefined {
  const rawPath = target.split("?")[0] ?? "/";
  if (options.kind.api === "http") return rawPath;
  const prefix = `/${options.kind.stage}`;
  if (rawPath === prefix) return "/";
  return rawPath.startsWith(`${prefix}/`) ? rawPath.slice(prefix.length) : undefined;
}

function eventFor(
  options: ApiGatewayOptions,
  request: ReceivedRequest,
  facts: RequestContextFacts,
  path: string,
): ProxyEvent {
  const { kind } = options;
  if (kind.api === "rest") return restEvent(request, facts, kind.stage, path, kind.binaryMediaTypes ?? []);
  return kind.payloadFormat === "1.0" ? httpV1Event(request, facts) : httpV2Event(request, facts);
}

type Outcome = { kind: "result"; result: unknown } | { kind: "failed" } | { kind: "timeout" };

/**
 * The integration timeout stops the waiting, not the function: it may still finish, unseen, as on AWS.
 * Any rejection (the function threw, crashed or ran past its own timeout) is an integration failure.
 */
async function invokeWithin(
  invoke: ApiGatewayOptions["invoke"],
  event: ProxyEvent,
  timeoutMs: number,
): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ kind: "timeout" }), timeoutMs);
  });
  const invocation = Promise.resolve()
    .then(() => invoke(event))
    .then(
      (result): Outcome => ({ kind: "result", result }),
      (): Outcome => ({ kind: "failed" }),
    );
  try {
    return await Promise.race([invocation, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface RequestIds {
  readonly requestId: string;
  readonly extendedRequestId: string;
  readonly traceId: string;
}

/** REST: a UUID request id and a short extended id; HTTP APIs use the short one for both. */
function requestIds(api: "rest" | "http"): RequestIds {
  const short = `${randomBytes(11).toString("base64").replace(/[+/]/g, "A").slice(0, 15)}=`;
  const epoch = Math.floor(Date.now() / 1000).toString(16);
  return {
    requestId: api === "rest" ? randomUUID() : short,
    extendedRequestId: short,
    traceId: `Root=1-${epoch}-${randomBytes(12).toString("hex")}`,
  };
}

/** The ids API Gateway puts on every response: REST `x-amzn-RequestId` and `x-amz-apigw-id`, HTTP `apigw-requestid`. */
function gatewayHeaders(options: ApiGatewayOptions, ids: RequestIds): Array<[string, string]> {
  return options.kind.api === "rest"
    ? [
        ["x-amzn-RequestId", ids.requestId],
        ["x-amz-apigw-id", ids.extendedRequestId],
        ["X-Amzn-Trace-Id", ids.traceId],
      ]
    : [["Apigw-Requestid", ids.extendedRequestId]];
}

function sendReply(
  res: ServerResponse,
  options: ApiGatewayOptions,
  ids: RequestIds,
  reply: GatewayReply,
): void {
  res.statusCode = reply.status;
  res.setHeader("Content-Type", "application/json");
  if (reply.errorType) res.setHeader("x-amzn-ErrorType", reply.errorType);
  for (const [name, value] of gatewayHeaders(options, ids)) res.setHeader(name, value);
  res.setHeader("Content-Length", Buffer.byteLength(reply.body));
  res.end(reply.body);
}
