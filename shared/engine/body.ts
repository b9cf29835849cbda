import type { BackoffPolicy, Callbacks } from "../model/event.ts";

/**
 * The immutable part of an event, as the index stores it: `type\n{json}`. The type comes first
 * so a script can count by type without decoding JSON.
 *
 * With the journal on, the payload is not copied into Redis: the journal holds it (the dispatcher
 * reads it a look-ahead early and puts it in the queue message, or the worker reads it), and the
 * index keeps only what it needs to schedule (`"j":1` marks this). Without a journal (the
 * engine-only benchmark mode) the payload is stored inline.
 */
export interface EventBody {
  readonly type: string;
  readonly maxAttempts?: number | undefined;
  readonly backoff?: BackoffPolicy | undefined;
  /** Read by the worker when the event finishes; kept in the body so no journal read is needed. */
  readonly callbacks?: Callbacks | undefined;
}

export interface DecodedBody extends EventBody {
  /** The payload when it is stored inline; undefined when it lives in the journal. */
  readonly payload: unknown;
  readonly payloadInJournal: boolean;
}

interface Encoded {
  p?: unknown;
  j?: 1;
  m?: number;
  b?: BackoffPolicy;
  c?: Callbacks;
}

export function encodeBody(body: EventBody, payload: { inline: unknown } | "journal"): string {
  const encoded: Encoded = payload === "journal" ? { j: 1 } : { p: payload.inline };
  if (body.maxAttempts !== undefined) encoded.m = body.maxAttempts;
  if (body.backoff !== undefined) encoded.b = body.backoff;
  if (body.callbacks !== undefined) encoded.c = body.callbacks;
  return `${body.type}\n${JSON.stringify(encoded)}`;
}

export function decodeBody(raw: string): DecodedBody {
  const newline = raw.indexOf("\n");
  const decoded = JSON.parse(raw.slice(newline + 1)) as Encoded;
  return {
    type: raw.slice(0, newline),
    payload: decoded.p,
    payloadInJournal: decoded.j === 1,
    maxAttempts: decoded.m,
    backoff: decoded.b,
    ...(decoded.c && { callbacks: decoded.c }),
  };
}
