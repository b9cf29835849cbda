import { randomUUID } from "node:crypto";
import type { AwsFault } from "./errors.ts";

/**
 * The four wire protocols the gateway's services speak, and how each one carries an answer and an
 * error. The SDK picks the error class from exactly these places (`__type`, `x-amzn-ErrorType`,
 * `x-amzn-query-error`, `<Code>`), so they are written as AWS writes them.
 */
export type Protocol =
  | { readonly kind: "json"; readonly version: "1.0" | "1.1"; readonly queryCompatible: boolean }
  | { readonly kind: "rest-json" }
  | { readonly kind: "query"; readonly xmlns: string };

export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string | Uint8Array;
}

export function jsonReply(protocol: Protocol, value: unknown, status = 200): Reply {
  const contentType =
    protocol.kind === "json" ? `application/x-amz-json-${protocol.version}` : "application/json";
  return {
    status,
    headers: { "content-type": contentType, "x-amzn-requestid": randomUUID() },
    body: JSON.stringify(value),
  };
}

/** A query-protocol answer: `<OpResponse><OpResult>…</OpResult><ResponseMetadata/></OpResponse>`. */
export function queryReply(xmlns: string, operation: string, resultXml: string): Reply {
  const requestId = randomUUID();
  const body =
    `<${operation}Response xmlns="${xmlns}"><${operation}Result>${resultXml}</${operation}Result>` +
    `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata></${operation}Response>`;
  return { status: 200, headers: { "content-type": "text/xml", "x-amzn-requestid": requestId }, body };
}

export function faultReply(protocol: Protocol, fault: AwsFault): Reply {
  const requestId = randomUUID();
  switch (protocol.kind) {
    case "json": {
      const headers: Record<string, string> = {
        "content-type": `application/x-amz-json-${protocol.version}`,
        "x-amzn-requestid": requestId,
      };
      if (protocol.queryCompatible) headers["x-amzn-query-error"] = `${fault.queryCode};${fault.fault}`;
      const type = fault.namespace ? `${fault.namespace}#${fault.code}` : fault.code;
      return {
        status: fault.status,
        headers,
        body: JSON.stringify({ __type: type, [fault.messageKey]: fault.message }),
      };
    }
    case "rest-json":
      return {
        status: fault.status,
        headers: {
          "content-type": "application/json",
          "x-amzn-errortype": fault.code,
          "x-amzn-requestid": requestId,
        },
        body: JSON.stringify({ [fault.messageKey]: fault.message }),
      };
    case "query":
      return {
        status: fault.status,
        headers: { "content-type": "text/xml", "x-amzn-requestid": requestId },
        body:
          `<ErrorResponse xmlns="${protocol.xmlns}"><Error><Type>${fault.fault}</Type>` +
          `<Code>${escapeXml(fault.queryCode)}</Code><Message>${escapeXml(fault.message)}</Message>` +
          `</Error><RequestId>${requestId}</RequestId></ErrorResponse>`,
      };
  }
}

const XML_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => XML_ESCAPES[c] ?? c);
}

/**
 * A protocol to answer in when the service itself is not known (no credential scope, or a service
 * the gateway does not serve): the request's own content type says which family the caller expects.
 */
export function protocolFromContentType(contentType: string | undefined): Protocol {
  const type = contentType ?? "";
  if (type.includes("x-amz-json-1.1")) return { kind: "json", version: "1.1", queryCompatible: false };
  if (type.includes("x-amz-json-1.0")) return { kind: "json", version: "1.0", queryCompatible: false };
  if (type.includes("x-www-form-urlencoded")) return { kind: "query", xmlns: "https://aws.amazon.com/" };
  return { kind: "rest-json" };
}
