import { createHash } from "node:crypto";
import { ALGORITHM_IDENTIFIER } from "@smithy/signature-v4";
import { GatewayRefusal } from "./errors.ts";
import { incompleteSignature } from "./gateway-responses.ts";
import { headerValue, queryPairs, type ReceivedRequest } from "./request.ts";

/**
 * What a SigV4-signed request claims, read from its `Authorization` header or, for a presigned URL,
 * its `X-Amz-*` query parameters. Nothing here is verified yet: signature.ts does that.
 */
export interface SignatureClaim {
  readonly accessKeyId: string;
  /** The credential scope's parts: `<date>/<region>/<service>/<terminator>`. */
  readonly scope: readonly string[];
  readonly signedHeaders: readonly string[];
  readonly signature: string;
  /** The request time as signed, in ISO-8601 basic format (`20240102T030405Z`) when well formed. */
  readonly longDate: string;
  readonly sessionToken: string | undefined;
  /** Presigned URLs only: `X-Amz-Expires`, in seconds. */
  readonly expiresSeconds: number | undefined;
  readonly presigned: boolean;
}

/** The claim a request makes, undefined when it carries no SigV4 authentication at all. */
export function readClaim(request: ReceivedRequest): SignatureClaim | undefined {
  const authorization = headerValue(request, "authorization");
  if (authorization !== undefined) return fromHeader(request, authorization);
  const query = new Map(queryPairs(request.rawQuery));
  if (query.has("X-Amz-Algorithm") || query.has("X-Amz-Signature")) return fromQuery(query);
  return undefined;
}

/**
 * `AWS4-HMAC-SHA256 Credential=<key>/<scope>, SignedHeaders=a;b, Signature=<hex>`. API Gateway reads
 * the header whatever scheme it names, so `Bearer <token>` on an IAM route is a malformed signature,
 * not a missing one; its messages for each missing part are reproduced here.
 */
function fromHeader(request: ReceivedRequest, header: string): SignatureClaim {
  const [algorithm = "", ...rest] = header.trim().split(/\s+/);
  const fields = new Map<string, string>();
  for (const part of rest
    .join(" ")
    .split(/[,\s]+/)
    .filter(Boolean)) {
    const equals = part.indexOf("=");
    if (equals < 0) {
      const digest = createHash("sha256").update(header).digest("base64");
      throw new GatewayRefusal(
        incompleteSignature(
          `Invalid key=value pair (missing equal-sign) in Authorization header (hashed with SHA-256 and encoded with Base64): '${digest}'.`,
        ),
      );
    }
    fields.set(part.slice(0, equals), part.slice(equals + 1));
  }
  const date = headerValue(request, "x-amz-date") ?? headerValue(request, "date");
  const missing = [
    fields.has("Credential") ? "" : "Authorization header requires 'Credential' parameter. ",
    fields.has("Signature") ? "" : "Authorization header requires 'Signature' parameter. ",
    fields.has("SignedHeaders") ? "" : "Authorization header requires 'SignedHeaders' parameter. ",
    date !== undefined
      ? ""
      : "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ",
  ].join("");
  if (missing) throw new GatewayRefusal(incompleteSignature(`${missing}Authorization=${header}`));
  if (algorithm !== ALGORITHM_IDENTIFIER)
    throw new GatewayRefusal(incompleteSignature(`Unsupported Authorization Type: '${algorithm}'`));
  const credential = (fields.get("Credential") ?? "").split("/");
  return {
    accessKeyId: credential[0] ?? "",
    scope: credential.slice(1),
    signedHeaders: (fields.get("SignedHeaders") ?? "").split(";").filter(Boolean),
    signature: fields.get("Signature") ?? "",
    longDate: basicFormat(date ?? ""),
    sessionToken: headerValue(request, "x-amz-security-token"),
    expiresSeconds: undefined,
    presigned: false,
  };
}

function fromQuery(query: ReadonlyMap<string, string>): SignatureClaim {
  const required = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Signature",
    "X-Amz-Date",
    "X-Amz-SignedHeaders",
  ];
  if (required.some((name) => !query.has(name)) || query.get("X-Amz-Algorithm") !== ALGORITHM_IDENTIFIER) {
    throw new GatewayRefusal(
      incompleteSignature(
        "AWS query-string parameters must include 'X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Signature', 'X-Amz-Date', 'X-Amz-SignedHeaders'. Re-examine the query-string parameters.",
      ),
    );
  }
  const credential = (query.get("X-Amz-Credential") ?? "").split("/");
  const expires = query.get("X-Amz-Expires");
  return {
    accessKeyId: credential[0] ?? "",
    scope: credential.slice(1),
    signedHeaders: (query.get("X-Amz-SignedHeaders") ?? "").split(";").filter(Boolean),
    signature: query.get("X-Amz-Signature") ?? "",
    longDate: query.get("X-Amz-Date") ?? "",
    sessionToken: query.get("X-Amz-Security-Token"),
    expiresSeconds: expires !== undefined && /^\d+$/.test(expires) ? Number(expires) : undefined,
    presigned: true,
  };
}

/**
 * SigV4 dates are ISO-8601 basic format. A client that only sends an HTTP `Date` header signs with
 * that instant; it is converted so the rest of the checks see one form.
 */
function basicFormat(value: string): string {
  if (/^\d{8}T\d{6}Z$/.test(value)) return value;
  const parsed = Date.parse(value);
  if (Number.isNaN(parsed)) return value;
  return new Date(parsed)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}
