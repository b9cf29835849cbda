/**
 * The pieces of a request every proxy event carries (headers, query, body), in the forms each payload
 * format gives them. The rules are API Gateway's (set-up-lambda-proxy-integrations,
 * http-api-develop-integrations-lambda):
 * - 1.0 (REST and HTTP API): `headers`/`queryStringParameters` hold the last value of each name,
 *   `multiValueHeaders`/`multiValueQueryStringParameters` all of them; both null when empty.
 * - 2.0: header names lowercased, repeats joined with commas; `cookie` headers moved to `cookies`;
 *   repeated query values joined with commas; empty maps left out.
 */
import { headerValue, queryPairs, type ReceivedRequest } from "./request.ts";

export interface SingleAndMulti {
  readonly single: Record<string, string> | null;
  readonly multi: Record<string, string[]> | null;
}

/** Headers API Gateway adds on the way to the function, as on AWS (without CloudFront's). */
export function forwardedHeaders(
  request: ReceivedRequest,
  traceId: string,
  port: number,
): Array<[string, string]> {
  const forwardedFor = headerValue(request, "x-forwarded-for");
  return [
    ["X-Amzn-Trace-Id", traceId],
    ["X-Forwarded-For", forwardedFor ? `${forwardedFor}, ${request.sourceIp}` : request.sourceIp],
    ["X-Forwarded-Port", String(port)],
    ["X-Forwarded-Proto", "http"],
  ];
}

/**
 * Payload 1.0 headers: the client's names as written. `drop` removes headers the gateway consumes;
 * the ones it adds replace any the client sent under the same name.
 */
export function headersV1(
  request: ReceivedRequest,
  added: ReadonlyArray<readonly [string, string]>,
  drop: (name: string) => boolean,
): SingleAndMulti {
  const replaced = new Set(added.map(([name]) => name.toLowerCase()));
  const lines = request.rawHeaders.filter(([name]) => !drop(name) && !replaced.has(name.toLowerCase()));
  return group([...lines, ...added]);
}

/** Payload 2.0 headers and cookies. */
export function headersV2(
  request: ReceivedRequest,
  added: ReadonlyArray<readonly [string, string]>,
): { headers: Record<string, string>; cookies: string[] | undefined } {
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  const replaced = new Set(added.map(([name]) => name.toLowerCase()));
  for (const [rawName, value] of [
    ...request.rawHeaders.filter(([n]) => !replaced.has(n.toLowerCase())),
    ...added,
  ]) {
    const name = rawName.toLowerCase();
    if (name === "cookie") {
      cookies.push(
        ...value
          .split(";")
          .map((cookie) => cookie.trim())
          .filter(Boolean),
      );
      continue;
    }
    headers[name] = headers[name] === undefined ? value : `${headers[name]},${value}`;
  }
  return { headers, cookies: cookies.length > 0 ? cookies : undefined };
}

export function queryV1(rawQuery: string): SingleAndMulti {
  return group(queryPairs(rawQuery));
}

export function queryV2(rawQuery: string): Record<string, string> | undefined {
  const pairs = queryPairs(rawQuery);
  if (pairs.length === 0) return undefined;
  const query: Record<string, string> = {};
  for (const [name, value] of pairs)
    query[name] = query[name] === undefined ? value : `${query[name]},${value}`;
  return query;
}

function group(pairs: ReadonlyArray<readonly [string, string]>): SingleAndMulti {
  if (pairs.length === 0) return { single: null, multi: null };
  const single: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [name, value] of pairs) {
    single[name] = value;
    const values = multi[name];
    if (values) values.push(value);
    else multi[name] = [value];
  }
  return { single, multi };
}

export interface EventBody {
  readonly body: string | undefined;
  readonly isBase64Encoded: boolean;
}

/** REST: binary (base64) only when the Content-Type matches the API's binary media types; else UTF-8 text. */
export function restBody(request: ReceivedRequest, binaryMediaTypes: readonly string[]): EventBody {
  if (request.body.length === 0) return { body: undefined, isBase64Encoded: false };
  const binary = mediaTypeMatches(headerValue(request, "content-type"), binaryMediaTypes);
  return binary
    ? { body: request.body.toString("base64"), isBase64Encoded: true }
    : { body: request.body.toString("utf8"), isBase64Encoded: false };
}

/**
 * HTTP APIs infer the encoding from the request's Content-Type: text passes as is, anything else is
 * base64-encoded. AWS documents the inference, not its list; text here is `text/*` and the JSON, XML
 * and JavaScript types, which covers what Hourglass clients send.
 */
export function httpApiBody(request: ReceivedRequest): EventBody {
  if (request.body.length === 0) return { body: undefined, isBase64Encoded: false };
  const type = (headerValue(request, "content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const text = /^text\/|[/+](json|xml)$|^application\/(javascript|x-javascript|ecmascript)$/.test(type);
  return text
    ? { body: request.body.toString("utf8"), isBase64Encoded: false }
    : { body: request.body.toString("base64"), isBase64Encoded: true };
}

/** A media type (parameters ignored) against a `binaryMediaTypes` list, with `*` wildcards. */
export function mediaTypeMatches(value: string | undefined, patterns: readonly string[]): boolean {
  const type = (value ?? "").split(/[;,]/)[0]?.trim().toLowerCase() ?? "";
  if (!type) return false;
  const [major = "", minor = ""] = type.split("/");
  return patterns.some((pattern) => {
    const [pMajor = "", pMinor = ""] = pattern.trim().toLowerCase().split("/");
    return (pMajor === "*" || pMajor === major) && (pMinor === "*" || pMinor === minor);
  });
}
