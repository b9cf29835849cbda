/**
 * A function's result turned into the HTTP response API Gateway sends, or MalformedResultError where
 * API Gateway answers 502 (REST) / 500 (HTTP API) instead.
 *
 * Payload 1.0 (REST and HTTP API): `{ statusCode, headers?, multiValueHeaders?, body?, isBase64Encoded? }`
 * and nothing else; `headers` and `multiValueHeaders` merge, the latter winning for a name in both
 * (set-up-lambda-proxy-integrations). REST adds `Content-Type: application/json` when the function set
 * none (api-gateway-known-issues) and decodes a base64 body only when the request's first `Accept`
 * media type is one of the API's binary media types (api-gateway-payload-encodings); otherwise the
 * client gets the base64 text, as on AWS. HTTP APIs always decode. REST also renames `WWW-Authenticate`.
 *
 * Payload 2.0 also takes `cookies` (one `set-cookie` each), and a result without `statusCode` is the
 * body itself: a string as is, anything else as JSON, with status 200 and `content-type:
 * application/json` (http-api-develop-integrations-lambda, "Lambda function response for format 2.0").
 */
import { MalformedResultError } from "./errors.ts";
import { mediaTypeMatches } from "./event-parts.ts";
import type { ApiKind } from "./types.ts";

export interface GatewayResponse {
  readonly status: number;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly body: Buffer;
}

const V1_KEYS = new Set(["statusCode", "headers", "multiValueHeaders", "body", "isBase64Encoded"]);

/** `accept`: the request's Accept header, which decides REST's binary conversion. */
export function toResponse(kind: ApiKind, result: unknown, accept: string | undefined): GatewayResponse {
  if (kind.api === "http" && kind.payloadFormat === "2.0") return fromV2(result);
  const response = fromV1(result);
  if (kind.api === "http") return response.decode();
  const firstAccept = accept?.split(",")[0];
  const binary = kind.binaryMediaTypes !== undefined && mediaTypeMatches(firstAccept, kind.binaryMediaTypes);
  const decoded = binary ? response.decode() : response.asText();
  const headers = decoded.headers.map(([name, value]) => [remapped(name), value] as const);
  const hasType = headers.some(([name]) => name.toLowerCase() === "content-type");
  return { ...decoded, headers: hasType ? headers : [...headers, ["Content-Type", "application/json"]] };
}

/**
 * REST renames some integration response headers to `X-Amzn-Remapped-<name>`. Only the one AWS
 * documents by name is renamed here: `WWW-Authenticate` (api-gateway-known-issues, on the Android SDK
 * and 401 responses), so a 401 from the function reaches the client without its challenge, as on AWS.
 */
function remapped(name: string): string {
  return name.toLowerCase() === "www-authenticate" ? "x-amzn-Remapped-WWW-Authenticate" : name;
}

interface Structured {
  decode(): GatewayResponse;
  asText(): GatewayResponse;
}

function fromV1(result: unknown): Structured {
  const record = asRecord(result, "the result is not a JSON object");
  const unknown = Object.keys(record).filter((key) => !V1_KEYS.has(key));
  if (unknown.length > 0) throw new MalformedResultError(`unexpected field(s) ${unknown.join(", ")}`);
  const status = statusOf(record.statusCode);
  const single = headerMap(record.headers, "headers");
  const multi = multiHeaderMap(record.multiValueHeaders);
  const multiNames = new Set(multi.map(([name]) => name.toLowerCase()));
  const headers = [...single.filter(([name]) => !multiNames.has(name.toLowerCase())), ...multi];
  const { body, base64 } = bodyOf(record);
  return {
    decode: () => ({ status, headers, body: Buffer.from(body, base64 ? "base64" : "utf8") }),
    asText: () => ({ status, headers, body: Buffer.from(body, "utf8") }),
  };
}

function fromV2(result: unknown): GatewayResponse {
  const inferred = (body: string): GatewayResponse => ({
    status: 200,
    headers: [["content-type", "application/json"]],
    body: Buffer.from(body, "utf8"),
  });
  if (typeof result === "string") return inferred(result);
  if (typeof result !== "object" || result === null || Array.isArray(result) || !("statusCode" in result))
    return inferred(JSON.stringify(result ?? null));
  const record = result as Record<string, unknown>;
  const status = statusOf(record.statusCode);
  const headers: Array<readonly [string, string]> = [...headerMap(record.headers, "headers")];
  if (record.cookies !== undefined && record.cookies !== null) {
    if (!Array.isArray(record.cookies) || record.cookies.some((cookie) => typeof cookie !== "string"))
      throw new MalformedResultError("cookies is not an array of strings");
    for (const cookie of record.cookies as string[]) headers.push(["set-cookie", cookie]);
  }
  const { body, base64 } = bodyOf(record);
  return { status, headers, body: Buffer.from(body, base64 ? "base64" : "utf8") };
}

function asRecord(value: unknown, reason: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new MalformedResultError(reason);
  return value as Record<string, unknown>;
}

function statusOf(value: unknown): number {
  const status = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof status !== "number" || !Number.isInteger(status) || status < 100 || status > 599)
    throw new MalformedResultError(`statusCode ${JSON.stringify(value)} is not an HTTP status`);
  return status;
}

function bodyOf(record: Record<string, unknown>): { body: string; base64: boolean } {
  const { body, isBase64Encoded } = record;
  if (body !== undefined && body !== null && typeof body !== "string")
    throw new MalformedResultError("body is not a string");
  if (isBase64Encoded !== undefined && isBase64Encoded !== null && typeof isBase64Encoded !== "boolean")
    throw new MalformedResultError("isBase64Encoded is not a boolean");
  return { body: body ?? "", base64: isBase64Encoded === true };
}

function headerMap(value: unknown, field: string): Array<readonly [string, string]> {
  if (value === undefined || value === null) return [];
  const record = asRecord(value, `${field} is not an object`);
  const headers: Array<readonly [string, string]> = [];
  for (const [name, raw] of Object.entries(record)) {
    if (raw === null || raw === undefined) continue;
    if (!isScalar(raw)) throw new MalformedResultError(`${field}.${name} is not a string, number or boolean`);
    headers.push([name, String(raw)]);
  }
  return headers;
}

function multiHeaderMap(value: unknown): Array<readonly [string, string]> {
  if (value === undefined || value === null) return [];
  const record = asRecord(value, "multiValueHeaders is not an object");
  const headers: Array<readonly [string, string]> = [];
  for (const [name, values] of Object.entries(record)) {
    if (values === null || values === undefined) continue;
    if (!Array.isArray(values) || !values.every(isScalar))
      throw new MalformedResultError(`multiValueHeaders.${name} is not an array of strings`);
    for (const item of values) headers.push([name, String(item)]);
  }
  return headers;
}

function isScalar(value: unknown): value is string | number | boolean {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean";
}
