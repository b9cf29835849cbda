import type { BackoffPolicy } from "../events/model.ts";

/**
 * The immutable part of an event, as the index stores it: `type\n{json}`. The type comes first
 * so a script can count by type without decoding JSON.
 */
export interface EventBody {
  readonly type: string;
  readonly payload: unknown;
  readonly maxAttempts?: number | undefined;
  readonly backoff?: BackoffPolicy | undefined;
}

interface Encoded {
  p: unknown;
  m?: number;
  b?: BackoffPolicy;
}

export function encodeBody(body: EventBody): string {
  const encoded: Encoded = { p: body.payload };
  if (body.maxAttempts !== undefined) encoded.m = body.maxAttempts;
  if (body.backoff !== undefined) encoded.b = body.backoff;
  return `${body.type}\n${JSON.stringify(encoded)}`;
}

export function decodeBody(raw: string): EventBody {
  const newline = raw.indexOf("\n");
  const decoded = JSON.parse(raw.slice(newline + 1)) as Encoded;
  return { type: raw.slice(0, newline), payload: decoded.p, maxAttempts: decoded.m, backoff: decoded.b };
}
