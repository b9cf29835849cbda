import type { IncomingMessage } from "node:http";

/** API Gateway's payload quota for REST and HTTP APIs alike (developerguide/limits.html). */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** A request as it arrived, before any reading of it: what the signature covers and what the event carries. */
export interface ReceivedRequest {
  readonly method: string;
  /** The path exactly as sent, still percent-encoded, without the query. */
  readonly rawPath: string;
  /** Everything after `?`, as sent; "" without a query. */
  readonly rawQuery: string;
  /** Header lines in arrival order, names in the case the client wrote them. */
  readonly rawHeaders: ReadonlyArray<readonly [string, string]>;
  readonly body: Buffer;
  readonly sourceIp: string;
  /** `HTTP/1.1` */
  readonly protocol: string;
}

/** The body passed the payload quota; nothing past the limit was buffered. */
export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body over ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

export async function readRequest(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<ReceivedRequest> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) throw new BodyTooLargeError(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new BodyTooLargeError(maxBytes);
    chunks.push(chunk);
  }
  const target = req.url ?? "/";
  const question = target.indexOf("?");
  const rawHeaders: Array<readonly [string, string]> = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2)
    rawHeaders.push([req.rawHeaders[i] ?? "", req.rawHeaders[i + 1] ?? ""]);
  return {
    method: req.method ?? "GET",
    rawPath: question < 0 ? target : target.slice(0, question),
    rawQuery: question < 0 ? "" : target.slice(question + 1),
    rawHeaders,
    body: Buffer.concat(chunks),
    sourceIp: (req.socket.remoteAddress ?? "127.0.0.1").replace(/^::ffff:/, ""),
    protocol: `HTTP/${req.httpVersion}`,
  };
}

/** Every value of a header, case-insensitively, in arrival order. */
export function headerValues(request: ReceivedRequest, name: string): string[] {
  const lower = name.toLowerCase();
  return request.rawHeaders.filter(([key]) => key.toLowerCase() === lower).map(([, value]) => value);
}

/** A header's value; repeated headers are joined with commas, as HTTP allows and SigV4 canonicalizes. */
export function headerValue(request: ReceivedRequest, name: string): string | undefined {
  const values = headerValues(request, name);
  return values.length > 0 ? values.join(",") : undefined;
}

/**
 * The query as `[name, value]` pairs, decoded as form data (`+` is a space, as API Gateway decodes it
 * for queryStringParameters and as URLSearchParams-based signers encoded it), in order.
 */
export function queryPairs(rawQuery: string): Array<[string, string]> {
  return [...new URLSearchParams(rawQuery)];
}
