import { MalformedMessageError } from "./errors.ts";

/** The message a dispatcher sends and a worker receives. Small on purpose: the body stays in Redis. */
export interface DispatchMessage {
  /** `tenant/id`. */
  readonly member: string;
  readonly shard: number;
  readonly gen: number;
  /** Epoch ms; the worker never starts the handler before it. */
  readonly runAt: number;
  /** Attempts made before this dispatch. */
  readonly attempt: number;
  /**
   * The payload as JSON text, when the sender had it at hand and it is small enough: the worker
   * then starts the handler without reading the journal first. Absent: the worker reads it.
   */
  readonly payload?: string | undefined;
}

/**
 * Payloads up to this many UTF-8 bytes ride in the queue message (SQS's limit is 256 KiB for the
 * whole message, counted in bytes: a payload of 200,000 non-ASCII characters can be 600 KB).
 */
export const INLINE_PAYLOAD_LIMIT = 200_000;

/**
 * The message with the payload in it when the payload is small enough; otherwise the message as
 * it is, and the worker reads the payload from the journal. Every sender that has the payload at
 * hand (a create, a replay, the dispatcher's journal read) puts it in through this one rule.
 */
export function withInlinePayload(message: DispatchMessage, payloadJson: string): DispatchMessage {
  return fitsInline(payloadJson) ? { ...message, payload: payloadJson } : message;
}

function fitsInline(payloadJson: string): boolean {
  // Cheap bound first: a string's UTF-8 size is at most three bytes per UTF-16 unit.
  if (payloadJson.length * 3 <= INLINE_PAYLOAD_LIMIT) return true;
  return Buffer.byteLength(payloadJson, "utf8") <= INLINE_PAYLOAD_LIMIT;
}

/** The queue body: a positional JSON array, since every message pays for its bytes. */
export function encodeMessage(message: DispatchMessage): string {
  const fields: (string | number)[] = [
    message.member,
    message.shard,
    message.gen,
    message.runAt,
    message.attempt,
  ];
  if (message.payload !== undefined) fields.push(message.payload);
  return JSON.stringify(fields);
}

export function decodeMessage(body: string): DispatchMessage {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new MalformedMessageError(body);
  }
  if (
    !Array.isArray(value) ||
    (value.length !== 5 && value.length !== 6) ||
    typeof value[0] !== "string" ||
    !value.slice(1, 5).every((n) => Number.isSafeInteger(n)) ||
    (value.length === 6 && typeof value[5] !== "string")
  ) {
    throw new MalformedMessageError(body);
  }
  const [member, shard, gen, runAt, attempt, payload] = value as [
    string,
    number,
    number,
    number,
    number,
    string?,
  ];
  return payload === undefined
    ? { member, shard, gen, runAt, attempt }
    : { member, shard, gen, runAt, attempt, payload };
}
