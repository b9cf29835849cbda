/**
 * The Lambda proxy events API Gateway sends, per API kind. Shapes follow AWS's documented examples and
 * captured events (set-up-lambda-proxy-integrations, http-api-develop-integrations-lambda; the
 * aws-lambda-go testdata `apigw-request.json`, `apigw-v2-request-iam.json`).
 */
import type { CallerIdentity } from "./caller.ts";
import {
  forwardedHeaders,
  headersV1,
  headersV2,
  httpApiBody,
  queryV1,
  queryV2,
  restBody,
} from "./event-parts.ts";
import type { HttpProxyEventV1, HttpProxyEventV2, IamIdentityV1, RestProxyEvent } from "./event-types.ts";
import type { ReceivedRequest } from "./request.ts";

/** Everything about one request the gateway decided before building its event. */
export interface RequestContextFacts {
  readonly caller: CallerIdentity;
  /** The API owner's account. */
  readonly accountId: string;
  readonly apiId: string;
  /** The host the client called, as API Gateway reports `domainName` (the execute-api host on AWS). */
  readonly domainName: string;
  readonly port: number;
  /** REST: a UUID. HTTP APIs use the short id for both. */
  readonly requestId: string;
  /** The short id API Gateway also returns in `x-amz-apigw-id` / `apigw-requestid`. */
  readonly extendedRequestId: string;
  readonly traceId: string;
  readonly now: Date;
  /** REST with `apiKeys`: the `x-api-key` the client sent. */
  readonly apiKey: string | undefined;
}

/**
 * REST API (`LambdaRestApi`): `ANY /` and `ANY /{proxy+}`. `path` is the resource path without the
 * stage; `requestContext.path` keeps it. IAM authorization drops the SigV4 `Authorization` header on
 * the way to the integration (api-gateway-known-issues, the header table's note).
 */
export function restEvent(
  request: ReceivedRequest,
  facts: RequestContextFacts,
  stage: string,
  path: string,
  binaryMediaTypes: readonly string[],
): RestProxyEvent {
  const root = path === "/";
  const resource = root ? "/" : "/{proxy+}";
  const headers = headersV1(request, forwardedHeaders(request, facts.traceId, facts.port), (name) =>
    /^authorization$/i.test(name),
  );
  const query = queryV1(request.rawQuery);
  const body = restBody(request, binaryMediaTypes);
  return {
    resource,
    path,
    httpMethod: request.method,
    headers: headers.single ?? {},
    multiValueHeaders: headers.multi ?? {},
    queryStringParameters: query.single,
    multiValueQueryStringParameters: query.multi,
    pathParameters: root ? null : { proxy: safeDecode(path.slice(1)) },
    stageVariables: null,
    requestContext: {
      resourceId: resourceId(facts.apiId, resource),
      resourcePath: resource,
      httpMethod: request.method,
      extendedRequestId: facts.extendedRequestId,
      requestTime: clf(facts.now),
      path: `/${stage}${path}`,
      accountId: facts.accountId,
      protocol: request.protocol,
      stage,
      domainPrefix: facts.apiId,
      requestTimeEpoch: facts.now.getTime(),
      requestId: facts.requestId,
      identity: {
        cognitoIdentityPoolId: null,
        accountId: facts.caller.accountId,
        cognitoIdentityId: null,
        caller: facts.caller.caller,
        sourceIp: request.sourceIp,
        principalOrgId: null,
        accessKey: facts.caller.accessKey,
        cognitoAuthenticationType: null,
        cognitoAuthenticationProvider: null,
        userArn: facts.caller.userArn,
        userAgent: userAgent(headers.single),
        user: facts.caller.caller,
        ...(facts.apiKey !== undefined && {
          apiKey: facts.apiKey,
          apiKeyId: resourceId(facts.apiId, `key:${facts.apiKey}`),
        }),
      } satisfies IamIdentityV1,
      domainName: facts.domainName,
      apiId: facts.apiId,
    },
    body: body.body ?? null,
    isBase64Encoded: body.isBase64Encoded,
  };
}

/** HTTP API, payload 1.0: the REST shape with `version`, the route key as resource, and no stage in paths. */
export function httpV1Event(request: ReceivedRequest, facts: RequestContextFacts): HttpProxyEventV1 {
  const headers = headersV1(request, forwardedHeaders(request, facts.traceId, facts.port), () => false);
  const query = queryV1(request.rawQuery);
  const body = httpApiBody(request);
  return {
    version: "1.0",
    resource: "$default",
    path: request.rawPath,
    httpMethod: request.method,
    headers: headers.single ?? {},
    multiValueHeaders: headers.multi ?? {},
    queryStringParameters: query.single,
    multiValueQueryStringParameters: query.multi,
    requestContext: {
      accountId: facts.accountId,
      apiId: facts.apiId,
      domainName: facts.domainName,
      domainPrefix: facts.apiId,
      extendedRequestId: facts.extendedRequestId,
      httpMethod: request.method,
      identity: {
        accessKey: facts.caller.accessKey,
        accountId: facts.caller.accountId,
        caller: facts.caller.caller,
        cognitoAmr: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: request.sourceIp,
        user: facts.caller.caller,
        userAgent: userAgent(headers.single),
        userArn: facts.caller.userArn,
      },
      path: request.rawPath,
      protocol: request.protocol,
      requestId: facts.extendedRequestId,
      requestTime: clf(facts.now),
      requestTimeEpoch: facts.now.getTime(),
      resourceId: "$default",
      resourcePath: "$default",
      stage: "$default",
    },
    pathParameters: null,
    stageVariables: null,
    body: body.body ?? null,
    isBase64Encoded: body.isBase64Encoded,
  };
}

/** HTTP API, payload 2.0, IAM authorizer: the caller sits in `requestContext.authorizer.iam`. */
export function httpV2Event(request: ReceivedRequest, facts: RequestContextFacts): HttpProxyEventV2 {
  const { headers, cookies } = headersV2(request, forwardedHeaders(request, facts.traceId, facts.port));
  const query = queryV2(request.rawQuery);
  const body = httpApiBody(request);
  return {
    version: "2.0",
    routeKey: "$default",
    rawPath: request.rawPath,
    rawQueryString: request.rawQuery,
    ...(cookies && { cookies }),
    headers,
    ...(query && { queryStringParameters: query }),
    requestContext: {
      accountId: facts.accountId,
      apiId: facts.apiId,
      authorizer: {
        iam: {
          accessKey: facts.caller.accessKey,
          accountId: facts.caller.accountId,
          callerId: facts.caller.caller,
          cognitoIdentity: null,
          principalOrgId: null,
          userArn: facts.caller.userArn,
          userId: facts.caller.userId,
        },
      },
      domainName: facts.domainName,
      domainPrefix: facts.apiId,
      http: {
        method: request.method,
        path: request.rawPath,
        protocol: request.protocol,
        sourceIp: request.sourceIp,
        userAgent: headers["user-agent"] ?? "",
      },
      requestId: facts.extendedRequestId,
      routeKey: "$default",
      stage: "$default",
      time: clf(facts.now),
      timeEpoch: facts.now.getTime(),
    },
    ...(body.body !== undefined && { body: body.body }),
    isBase64Encoded: body.isBase64Encoded,
  };
}

/** `04/Mar/2020:19:15:17 +0000`, the time format of `requestTime` and 2.0's `time`. */
function clf(date: Date): string {
  const months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(date.getUTCDate())}/${months[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
}

function userAgent(headers: Record<string, string> | null): string | null {
  const name = Object.keys(headers ?? {}).find((key) => key.toLowerCase() === "user-agent");
  return name === undefined ? null : (headers?.[name] ?? null);
}

/** API Gateway ids are short lowercase alphanumerics; stable per API and resource here. */
function resourceId(apiId: string, what: string): string {
  let hash = 0;
  for (const char of `${apiId}/${what}`) hash = (hash * 31 + (char.codePointAt(0) ?? 0)) >>> 0;
  return hash.toString(36).padStart(6, "0").slice(0, 6);
}

/** `pathParameters` are decoded; a malformed escape stays as sent rather than failing the request. */
function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}
