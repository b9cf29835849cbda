import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import { Hono } from "hono";
import { handle, type LambdaEvent } from "hono/aws-lambda";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ApiGateway,
  type ApiKind,
  type CallerKey,
  type HttpProxyEventV1,
  type HttpProxyEventV2,
  InvocationError,
  type RestProxyEvent,
  startApiGateway,
} from "../../scripts/aws-shaped/api-gateway/index.ts";
import { sigV4Signer } from "../../shared/client/sigv4.ts";
import { loadConfig } from "../../shared/config.ts";
import { type TenantEnv, tenancy } from "../../shared/http/tenancy.ts";

const REGION = "us-east-1";
const ACCOUNT = "000000000000";
const REST: ApiKind = { api: "rest", stage: "api" };
const HTTP_V1: ApiKind = { api: "http", payloadFormat: "1.0" };
const HTTP_V2: ApiKind = { api: "http", payloadFormat: "2.0" };

interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}
const DEV: Credentials = { accessKeyId: "dev", secretAccessKey: "anything" };
const ALICE: Credentials = { accessKeyId: "AKIAALICE0000000", secretAccessKey: "alice-secret" };
const OPS: Credentials = {
  accessKeyId: "ASIAOPS000000000",
  secretAccessKey: "ops-secret",
  sessionToken: "ops-token",
};
const KEYS = new Map<string, CallerKey>([
  [ALICE.accessKeyId, { secretAccessKey: ALICE.secretAccessKey, arn: `arn:aws:iam::${ACCOUNT}:user/alice` }],
  [
    OPS.accessKeyId,
    {
      secretAccessKey: OPS.secretAccessKey,
      sessionToken: "ops-token",
      arn: `arn:aws:sts::${ACCOUNT}:assumed-role/Ops/s1`,
    },
  ],
]);

const gateways: ApiGateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.stop()));
});

/** A gateway whose function answers with `reply(event)`, by default the event itself as JSON. */
async function gateway(
  kind: ApiKind,
  extra: {
    keys?: ReadonlyMap<string, CallerKey>;
    timeoutMs?: number;
    reply?: (event: unknown) => unknown;
  } = {},
) {
  const events: unknown[] = [];
  const reply = extra.reply ?? ((event: unknown) => ({ statusCode: 200, body: JSON.stringify(event) }));
  const started = await startApiGateway({
    kind,
    region: REGION,
    accountId: ACCOUNT,
    apiId: "a1b2c3d4e5",
    ...(extra.keys && { keys: extra.keys }),
    ...(extra.timeoutMs !== undefined && { timeoutMs: extra.timeoutMs }),
    invoke: async (event) => {
      events.push(event);
      return reply(event);
    },
  });
  gateways.push(started);
  return { url: started.url, origin: new URL(started.url).origin, events };
}

/**
 * Signs with the project's own signer (what `hourglass --sigv4` uses), which takes its credentials
 * from the standard chain: here, the environment.
 */
async function projectSign(request: Request, credentials: Credentials): Promise<Request> {
  const names = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"] as const;
  const saved = names.map((name) => process.env[name]);
  const values = [
    credentials.accessKeyId,
    credentials.secretAccessKey,
    credentials.sessionToken || undefined,
  ];
  for (const [i, name] of names.entries()) setEnv(name, values[i]);
  try {
    return await sigV4Signer({ region: REGION })(request);
  } finally {
    for (const [i, name] of names.entries()) setEnv(name, saved[i]);
  }
}

function setEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

async function projectFetch(
  url: string,
  init: RequestInit = {},
  credentials: Credentials = DEV,
): Promise<Response> {
  return fetch(await projectSign(new Request(url, init), credentials));
}

interface DirectRequest {
  readonly method?: string;
  readonly path: string;
  /** Sent as is; `query` is what the signer is told it means. */
  readonly rawQuery?: string;
  readonly query?: Record<string, string | string[]>;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  readonly signingDate?: Date;
  readonly region?: string;
  readonly signHost?: boolean;
}

/** The SDK signer directly, for what the project's signer cannot express (repeated keys, dates). */
async function directFetch(
  origin: string,
  request: DirectRequest,
  credentials: Credentials,
): Promise<Response> {
  const { host, port } = new URL(origin);
  const signer = new SignatureV4({
    service: "execute-api",
    region: request.region ?? REGION,
    credentials,
    sha256: Hash.bind(null, "sha256"),
  });
  const signed = await signer.sign(
    {
      method: request.method ?? "GET",
      protocol: "http:",
      hostname: "127.0.0.1",
      port: Number(port),
      path: request.path,
      query: request.query ?? {},
      headers: { ...(request.signHost !== false && { host }), ...request.headers },
      ...(request.body !== undefined && { body: request.body }),
    },
    { signingDate: request.signingDate ?? new Date() },
  );
  const headers = Object.fromEntries(Object.entries(signed.headers).filter(([name]) => name !== "host"));
  const query = request.rawQuery ? `?${request.rawQuery}` : "";
  return fetch(`${origin}${request.path}${query}`, {
    method: request.method ?? "GET",
    headers,
    ...(request.body !== undefined && { body: request.body }),
  });
}

async function json<T>(response: Response): Promise<T> {
  return (await response.json()) as T;
}

describe("REST API (standard profile)", () => {
  it("hands the function the REST proxy event: path without the stage, the key's IAM user as caller", async () => {
    const api = await gateway(REST);
    const response = await projectFetch(`${api.url}v1/events?limit=5`, { headers: { "X-Custom": "one" } });
    expect(response.status).toBe(200);
    const event = await json<RestProxyEvent>(response);
    expect(event).toMatchObject({
      resource: "/{proxy+}",
      path: "/v1/events",
      httpMethod: "GET",
      pathParameters: { proxy: "v1/events" },
      queryStringParameters: { limit: "5" },
      multiValueQueryStringParameters: { limit: ["5"] },
      stageVariables: null,
      body: null,
      isBase64Encoded: false,
      requestContext: {
        path: "/api/v1/events",
        stage: "api",
        resourcePath: "/{proxy+}",
        accountId: ACCOUNT,
        apiId: "a1b2c3d4e5",
        identity: { userArn: `arn:aws:iam::${ACCOUNT}:user/dev`, accessKey: "dev", accountId: ACCOUNT },
      },
    });
    expect(event.headers["x-custom"]).toBe("one");
    expect(event.multiValueHeaders["x-custom"]).toEqual(["one"]);
    // A SigV4 Authorization header never reaches the integration (api-gateway-known-issues).
    expect(Object.keys(event.headers).map((name) => name.toLowerCase())).not.toContain("authorization");
    expect(event.headers["X-Forwarded-For"]).toBe("127.0.0.1");
    expect(response.headers.get("x-amzn-requestid")).toBe(event.requestContext.requestId);
    expect(response.headers.get("x-amz-apigw-id")).toBe(event.requestContext.extendedRequestId);
  });

  it("sends the stage root to the function as resource /", async () => {
    const api = await gateway(REST);
    for (const url of [api.url, api.url.slice(0, -1)]) {
      const event = await json<RestProxyEvent>(await projectFetch(url));
      expect(event).toMatchObject({ resource: "/", path: "/", pathParameters: null });
    }
  });

  it("forbids paths outside the stage, before any signature is read", async () => {
    const api = await gateway(REST);
    const response = await fetch(`${api.origin}/prod/v1/events`);
    expect(response.status).toBe(403);
    expect(await response.text()).toBe('{"message":"Forbidden"}');
    expect(response.headers.get("x-amzn-errortype")).toBe("ForbiddenException");
  });

  it("refuses an unsigned request as API Gateway does, without running the function", async () => {
    const api = await gateway(REST);
    const response = await fetch(`${api.url}health`);
    expect(response.status).toBe(403);
    expect(await response.text()).toBe('{"message":"Missing Authentication Token"}');
    expect(response.headers.get("x-amzn-errortype")).toBe("MissingAuthenticationTokenException");
    expect(response.headers.get("x-amzn-requestid")).toMatch(/^[0-9a-f-]{36}$/);
    expect(api.events).toHaveLength(0);
  });

  it("reads a bearer token on an IAM route as a malformed signature", async () => {
    const api = await gateway(REST);
    const response = await fetch(`${api.url}v1/events`, { headers: { authorization: "Bearer abc.def" } });
    expect(response.status).toBe(403);
    expect(response.headers.get("x-amzn-errortype")).toBe("IncompleteSignatureException");
    expect((await json<{ message: string }>(response)).message).toMatch(
      /^Invalid key=value pair \(missing equal-sign\)/,
    );
  });

  it("refuses a signature dated outside execute-api's 5-minute window", async () => {
    const api = await gateway(REST);
    const stale = await directFetch(
      api.origin,
      { path: "/api/v1/events", signingDate: new Date(Date.now() - 6 * 60_000) },
      DEV,
    );
    expect(stale.status).toBe(403);
    expect(stale.headers.get("x-amzn-errortype")).toBe("InvalidSignatureException");
    expect((await json<{ message: string }>(stale)).message).toMatch(
      /^Signature expired: \d{8}T\d{6}Z is now earlier than \d{8}T\d{6}Z \(\d{8}T\d{6}Z - 5 min\.\)$/,
    );
    const early = await directFetch(
      api.origin,
      { path: "/api/v1/events", signingDate: new Date(Date.now() + 6 * 60_000) },
      DEV,
    );
    expect((await json<{ message: string }>(early)).message).toMatch(/^Signature not yet current: /);
  });

  it("checks the credential scope and that host is signed, even for keys it cannot verify", async () => {
    const api = await gateway(REST);
    const region = await directFetch(api.origin, { path: "/api/v1/events", region: "eu-west-1" }, DEV);
    expect(region.status).toBe(403);
    expect(await region.text()).toBe(
      '{"message":"Credential should be scoped to a valid region, not \'eu-west-1\'. "}',
    );
    const hostless = await directFetch(api.origin, { path: "/api/v1/events", signHost: false }, DEV);
    expect(hostless.status).toBe(403);
    expect(hostless.headers.get("x-amzn-errortype")).toBe("InvalidSignatureException");
    expect(api.events).toHaveLength(0);
  });

  it("verifies mapped keys: the right secret passes as the mapped caller, a wrong one does not", async () => {
    const api = await gateway(REST, { keys: KEYS });
    const ok = await projectFetch(`${api.url}v1/events`, {}, ALICE);
    expect(ok.status).toBe(200);
    const identity = (await json<RestProxyEvent>(ok)).requestContext.identity;
    expect(identity).toMatchObject({
      userArn: `arn:aws:iam::${ACCOUNT}:user/alice`,
      accessKey: ALICE.accessKeyId,
    });
    expect(identity.caller).toMatch(/^AIDA[0-9A-F]{17}$/);

    const wrong = await projectFetch(`${api.url}v1/events`, {}, { ...ALICE, secretAccessKey: "not-alice" });
    expect(wrong.status).toBe(403);
    expect(wrong.headers.get("x-amzn-errortype")).toBe("InvalidSignatureException");
    const { message } = await json<{ message: string }>(wrong);
    expect(message).toMatch(
      /^The request signature we calculated does not match the signature you provided\. /,
    );
    expect(message).toContain(
      "The Canonical String for this request should have been\n'GET\n/api/v1/events\n\nhost:",
    );
    expect(message).toContain(`The String-to-Sign should have been\n'AWS4-HMAC-SHA256\n`);
  });

  it("refuses keys the mapping does not know, and temporary keys without their session token", async () => {
    const api = await gateway(REST, { keys: KEYS });
    const unknown = await projectFetch(`${api.url}v1/events`, {}, DEV);
    expect(unknown.status).toBe(403);
    expect(unknown.headers.get("x-amzn-errortype")).toBe("UnrecognizedClientException");
    expect(await unknown.text()).toBe('{"message":"The security token included in the request is invalid."}');

    const tokenless = await projectFetch(`${api.url}v1/events`, {}, { ...OPS, sessionToken: "" });
    expect(tokenless.headers.get("x-amzn-errortype")).toBe("UnrecognizedClientException");
    const session = await projectFetch(`${api.url}v1/events`, {}, OPS);
    expect(session.status).toBe(200);
    const identity = (await json<RestProxyEvent>(session)).requestContext.identity;
    expect(identity.userArn).toBe(`arn:aws:sts::${ACCOUNT}:assumed-role/Ops/s1`);
    expect(identity.caller).toMatch(/^AROA[0-9A-F]{17}:s1$/);
  });

  it("covers the body: a body changed after signing fails a mapped key, and is all an unmapped key can get past", async () => {
    const signed = async (url: string, credentials: Credentials) => {
      const request = await projectSign(new Request(url, { method: "POST", body: '{"a":1}' }), credentials);
      return fetch(url, { method: "POST", headers: request.headers, body: '{"a":2}' });
    };
    const mapped = await gateway(REST, { keys: KEYS });
    expect((await signed(`${mapped.url}v1/events`, ALICE)).status).toBe(403);
    const open = await gateway(REST);
    expect((await signed(`${open.url}v1/events`, DEV)).status).toBe(200);
  });

  it("decodes repeated query keys and spaces as API Gateway does, and verifies their signature", async () => {
    const api = await gateway(REST, { keys: KEYS });
    const response = await directFetch(
      api.origin,
      { path: "/api/v1/events", rawQuery: "tag=a%20b&tag=c&q=x+y", query: { tag: ["a b", "c"], q: "x y" } },
      ALICE,
    );
    expect(response.status).toBe(200);
    const event = await json<RestProxyEvent>(response);
    expect(event.queryStringParameters).toEqual({ tag: "c", q: "x y" });
    expect(event.multiValueQueryStringParameters).toEqual({ tag: ["a b", "c"], q: ["x y"] });
    // The project's signer, with repeated keys (it once signed only the last value), and a space written either way.
    const repeated = await projectFetch(`${api.url}v1/events?tag=a&tag=b`, {}, ALICE);
    expect(repeated.status).toBe(200);
    expect((await json<RestProxyEvent>(repeated)).multiValueQueryStringParameters).toEqual({
      tag: ["a", "b"],
    });
    for (const query of ["q=x+y", "q=x%20y"]) {
      const own = await projectFetch(`${api.url}v1/events?${query}`, {}, ALICE);
      expect(own.status).toBe(200);
      expect((await json<RestProxyEvent>(own)).queryStringParameters).toEqual({ q: "x y" });
    }
  });

  it("passes a unicode body through as the same text, under a verified signature", async () => {
    const api = await gateway(REST, { keys: KEYS });
    const body = JSON.stringify({ type: "note", payload: { text: "héllo ✓ 🎉 日本" } });
    const response = await projectFetch(
      `${api.url}v1/events`,
      { method: "POST", body, headers: { "content-type": "application/json" } },
      ALICE,
    );
    expect(response.status).toBe(200);
    expect(await json<RestProxyEvent>(response)).toMatchObject({
      httpMethod: "POST",
      body,
      isBase64Encoded: false,
    });
  });

  it("accepts a presigned URL and refuses one whose query was changed", async () => {
    const api = await gateway(REST, { keys: KEYS });
    const { host, port } = new URL(api.origin);
    const signer = new SignatureV4({
      service: "execute-api",
      region: REGION,
      credentials: ALICE,
      sha256: Hash.bind(null, "sha256"),
    });
    const presigned = await signer.presign(
      {
        method: "GET",
        protocol: "http:",
        hostname: "127.0.0.1",
        port: Number(port),
        path: "/api/v1/stats",
        query: { a: "1" },
        headers: { host },
      },
      { expiresIn: 60 },
    );
    const query = new URLSearchParams(presigned.query as Record<string, string>).toString();
    const ok = await fetch(`${api.origin}/api/v1/stats?${query}`);
    expect(ok.status).toBe(200);
    expect((await json<RestProxyEvent>(ok)).requestContext.identity.userArn).toBe(
      `arn:aws:iam::${ACCOUNT}:user/alice`,
    );
    const changed = await fetch(`${api.origin}/api/v1/stats?${query.replace("a=1", "a=2")}`);
    expect(changed.headers.get("x-amzn-errortype")).toBe("InvalidSignatureException");
  });

  it("requires an API key when the methods do, and reports it in the identity", async () => {
    const api = await gateway({ api: "rest", stage: "api", apiKeys: true });
    expect((await projectFetch(`${api.url}v1/events`)).status).toBe(403);
    const response = await projectFetch(`${api.url}v1/events`, { headers: { "x-api-key": "key-123" } });
    expect((await json<RestProxyEvent>(response)).requestContext.identity.apiKey).toBe("key-123");
  });

  it("returns a base64 body as text unless the API's binary media types match the first Accept type", async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    const reply = () => ({
      statusCode: 200,
      headers: { "content-type": "application/octet-stream" },
      body: bytes.toString("base64"),
      isBase64Encoded: true,
    });
    const plain = await gateway(REST, { reply });
    expect(await (await projectFetch(`${plain.url}file`)).text()).toBe(bytes.toString("base64"));
    const binary = await gateway({ api: "rest", stage: "api", binaryMediaTypes: ["*/*"] }, { reply });
    const response = await projectFetch(`${binary.url}file`, {
      headers: { accept: "application/octet-stream" },
    });
    expect(Buffer.from(await response.arrayBuffer())).toEqual(bytes);
  });

  it("merges headers and multiValueHeaders, defaults Content-Type and remaps WWW-Authenticate", async () => {
    const api = await gateway(REST, {
      reply: () => ({
        statusCode: 401,
        headers: { "x-one": "single", "x-both": "from-headers", "WWW-Authenticate": 'Bearer realm="x"' },
        multiValueHeaders: { "x-both": ["m1", "m2"], "set-cookie": ["a=1", "b=2"] },
        body: "{}",
      }),
    });
    const response = await projectFetch(`${api.url}x`);
    expect(response.status).toBe(401);
    expect(response.headers.get("x-one")).toBe("single");
    expect(response.headers.get("x-both")).toBe("m1, m2");
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(response.headers.get("www-authenticate")).toBeNull();
    expect(response.headers.get("x-amzn-remapped-www-authenticate")).toBe('Bearer realm="x"');
  });

  it("answers 502 for a malformed result or a function error", async () => {
    const results: unknown[] = [
      { statusCode: "abc", body: "" },
      { statusCode: 200, body: { not: "a string" } },
      { statusCode: 200, body: "", extra: true },
      "just a string",
      null,
    ];
    for (const result of results) {
      const api = await gateway(REST, { reply: () => result });
      const response = await projectFetch(`${api.url}x`);
      expect(response.status, JSON.stringify(result)).toBe(502);
      expect(await response.text()).toBe('{"message": "Internal server error"}');
    }
    const failing = await gateway(REST, {
      reply: () => {
        throw new InvocationError("error", "boom");
      },
    });
    expect((await projectFetch(`${failing.url}x`)).status).toBe(502);
  });

  it("answers 504 when the function outlasts the integration timeout", async () => {
    const api = await gateway(REST, { timeoutMs: 150, reply: () => new Promise(() => {}) });
    const response = await projectFetch(`${api.url}slow`);
    expect(response.status).toBe(504);
    expect(await response.text()).toBe('{"message": "Endpoint request timed out"}');
  });

  it("refuses a body over 10 MB with 413, declared or streamed", async () => {
    const api = await gateway(REST);
    const declared = await fetch(`${api.url}big`, {
      method: "POST",
      body: Buffer.alloc(10 * 1024 * 1024 + 1, 97),
    });
    expect(declared.status).toBe(413);
    // Chunked: no Content-Length to refuse up front, so the limit must hold while reading.
    const chunk = new Uint8Array(1024 * 1024).fill(97);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 11) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const streamed = await fetch(`${api.url}big`, {
      method: "POST",
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expect(api.events).toHaveLength(0);
  });
});

describe("HTTP API (lean profile)", () => {
  it("payload 1.0: the route key as resource, $default stage, the caller in identity", async () => {
    const api = await gateway(HTTP_V1);
    expect(api.url).toBe(`${api.origin}/`);
    const response = await projectFetch(`${api.url}v1/events?tag=a&tag=b`);
    const event = await json<HttpProxyEventV1>(response);
    expect(event).toMatchObject({
      version: "1.0",
      resource: "$default",
      path: "/v1/events",
      queryStringParameters: { tag: "b" },
      multiValueQueryStringParameters: { tag: ["a", "b"] },
      requestContext: {
        stage: "$default",
        resourcePath: "$default",
        path: "/v1/events",
        identity: {
          userArn: `arn:aws:iam::${ACCOUNT}:user/dev`,
          accessKey: "dev",
          user: expect.stringMatching(/^AIDA/),
        },
      },
    });
    expect(response.headers.get("apigw-requestid")).toBe(event.requestContext.requestId);
  });

  it("payload 2.0: raw path and query, lowercase headers, cookies, the caller under authorizer.iam", async () => {
    const api = await gateway(HTTP_V2);
    const response = await projectFetch(`${api.url}v1/events?tag=a&tag=b&q=x%20y`, {
      headers: { "X-Custom": "v", cookie: "c1=1; c2=2" },
    });
    const event = await json<HttpProxyEventV2>(response);
    expect(event).toMatchObject({
      version: "2.0",
      routeKey: "$default",
      rawPath: "/v1/events",
      rawQueryString: "tag=a&tag=b&q=x%20y",
      queryStringParameters: { tag: "a,b", q: "x y" },
      cookies: ["c1=1", "c2=2"],
      isBase64Encoded: false,
      requestContext: {
        stage: "$default",
        http: { method: "GET", path: "/v1/events" },
        authorizer: {
          iam: { userArn: `arn:aws:iam::${ACCOUNT}:user/dev`, accessKey: "dev", accountId: ACCOUNT },
        },
      },
    });
    expect(event.headers["x-custom"]).toBe("v");
    expect(event.headers.cookie).toBeUndefined();
    expect(event.body).toBeUndefined();
    expect("identity" in event.requestContext).toBe(false);
  });

  it("payload 2.0: base64-encodes a binary request body and infers a response from a bare result", async () => {
    const api = await gateway(HTTP_V2, {
      reply: (event) =>
        (event as HttpProxyEventV2).rawPath === "/string"
          ? "plain"
          : { isBase64Encoded: (event as HttpProxyEventV2).isBase64Encoded },
    });
    const object = await projectFetch(`${api.url}object`, {
      method: "POST",
      body: new Uint8Array([1, 2, 3]),
      headers: { "content-type": "application/octet-stream" },
    });
    expect(object.headers.get("content-type")).toBe("application/json");
    expect(await object.json()).toEqual({ isBase64Encoded: true });
    expect(await (await projectFetch(`${api.url}string`)).text()).toBe("plain");
    const cookies = await gateway(HTTP_V2, { reply: () => ({ statusCode: 204, cookies: ["a=1", "b=2"] }) });
    const response = await projectFetch(`${cookies.url}x`);
    expect(response.status).toBe(204);
    expect(response.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
  });

  it("answers with the HTTP API's own errors: 403 Forbidden, 500, 503, and decodes base64 results", async () => {
    const unsigned = await fetch(`${(await gateway(HTTP_V1)).url}v1/events`);
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toBe('{"message":"Forbidden"}');
    const malformed = await projectFetch(
      `${(await gateway(HTTP_V1, { reply: () => ({ body: "x" }) })).url}x`,
    );
    expect(malformed.status).toBe(500);
    expect(await malformed.text()).toBe('{"message":"Internal Server Error"}');
    const slow = await gateway(HTTP_V2, { timeoutMs: 150, reply: () => new Promise(() => {}) });
    const timedOut = await projectFetch(`${slow.url}x`);
    expect(timedOut.status).toBe(503);
    expect(await timedOut.text()).toBe('{"message":"Service Unavailable"}');
    const bytes = Buffer.from([0, 200, 255]);
    const binary = await gateway(HTTP_V1, {
      reply: () => ({ statusCode: 200, body: bytes.toString("base64"), isBase64Encoded: true }),
    });
    expect(Buffer.from(await (await projectFetch(`${binary.url}x`)).arrayBuffer())).toEqual(bytes);
  });
});

describe("the app's Lambda adapter (hono/aws-lambda) behind each kind", () => {
  /** A minimal app with the project's real tenancy middleware, run as the API function runs it. */
  function honoFunction() {
    const config = loadConfig({ HOURGLASS_MODE: "aws", HOURGLASS_WEBHOOK_SECRET: "x".repeat(32) });
    type Env = TenantEnv & { Bindings: { event: { requestContext: { identity?: { userArn?: string } } } } };
    const app = new Hono<Env>();
    app.use("*", tenancy(config));
    app.all("*", async (c) =>
      c.json({
        userArn: c.env.event.requestContext.identity?.userArn ?? null,
        tenant: c.get("tenant"),
        path: c.req.path,
        tags: c.req.queries("tag") ?? [],
        body: await c.req.text(),
      }),
    );
    const handler = handle(app);
    return (event: unknown) => handler(event as LambdaEvent);
  }

  it.each<[string, ApiKind]>([
    ["REST", REST],
    ["HTTP API 1.0", HTTP_V1],
  ])("%s: the app sees the caller's ARN and names the tenant after it", async (_name, kind) => {
    const api = await gateway(kind, { reply: honoFunction() });
    const body = JSON.stringify({ text: "héllo ✓" });
    const response = await projectFetch(`${api.url}v1/events?tag=a&tag=b%20c`, { method: "POST", body });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      userArn: `arn:aws:iam::${ACCOUNT}:user/dev`,
      tenant: `${ACCOUNT}-user-dev`,
      path: "/v1/events",
      tags: ["a", "b c"],
      body,
    });
  });

  it("HTTP API 2.0: the ARN is only under authorizer.iam, and the app names the tenant from it", async () => {
    const api = await gateway(HTTP_V2, { reply: honoFunction() });
    const response = await projectFetch(`${api.url}v1/events`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ userArn: null, tenant: `${ACCOUNT}-user-dev` });
  });
});
