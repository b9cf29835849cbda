import type { BackoffPolicy, Callbacks } from "../model/event.ts";

/**
 * The immutable part of an event, as the index stores it: `type\n{policy json}\n{payload json}`.
 * The type comes first so a script can count by type without decoding JSON; the policy
 * (maxAttempts, backoff, callbacks) is empty when the event has none; the payload part is empty
 * when the payload is in the journal.
 *
 * With the journal on, the payload is not copied into Redis: the journal holds it (the dispatcher
 * reads it a look-ahead early and puts it in the queue message, or the worker reads it), and the
 * index keeps only what it needs to schedule: `bench.noop\n\n`. Without a journal (the engine-only
 * benchmark mode) the payload is stored inline. Bodies are kept as they are in Redis, so every byte
 * here is a byte of Redis memory per pending event (docs/horizon.md, "Redis memory per event").
 *
 * Bodies written before this layout, `type\n{json}` with the payload in `p` or `"j":1` for one in
 * the journal, are still read: JSON.stringify never writes a raw newline, so the absence of a
 * second newline tells them apart.
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

/** The policy part (and, in the layout before, the whole envelope) as JSON. */
interface Encoded {
  p?: unknown;
  j?: 1;
  m?: number;
  b?: BackoffPolicy;
  c?: Callbacks;
}

export function encodeBody(body: EventBody, payload: { inline: unknown } | "journal"): string {
  const policy: Encoded = {};
  if (body.maxAttempts !== undefined) policy.m = body.maxAttempts;
  if (body.backoff !== undefined) policy.b = body.backoff;
  if (body.callbacks !== undefined) policy.c = body.callbacks;
  // An inline payload of `undefined` has no JSON: it keeps the layout before (no payload, not in
  // the journal), which reads back as exactly that.
  if (payload !== "journal" && payload.inline === undefined) return `${body.type}\n${JSON.stringify(policy)}`;
  const encodedPolicy = Object.keys(policy).length > 0 ? JSON.stringify(policy) : "";
  const encodedPayload = payload === "journal" ? "" : JSON.stringify(payload.inline);
  return `${body.type}\n${encodedPolicy}\n${encodedPayload}`;
}

export function decodeBody(raw: string): DecodedBody {
  const first = raw.indexOf("\n");
  const second = raw.indexOf("\n", first + 1);
  const type = raw.slice(0, first);
  if (second < 0) {
    // The layout before: `type\n{json}`, the payload in `p` or `"j":1` when it is in the journal.
    const decoded = JSON.parse(raw.slice(first + 1)) as Encoded;
    return {
      type,
      payload: decoded.p,
      payloadInJournal: decoded.j === 1,
      maxAttempts: decoded.m,
      backoff: decoded.b,
      ...(decoded.c && { callbacks: decoded.c }),
    };
  }
  const policyText = raw.slice(first + 1, second);
  const payloadText = raw.slice(second + 1);
  const policy = (policyText === "" ? {} : JSON.parse(policyText)) as Encoded;
  return {
    type,
    payload: payloadText === "" ? undefined : JSON.parse(payloadText),
    payloadInJournal: payloadText === "",
    maxAttempts: policy.m,
    backoff: policy.b,
    ...(policy.c && { callbacks: policy.c }),
  };
}
