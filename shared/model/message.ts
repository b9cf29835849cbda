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

/**
 * The queue body: a positional JSON array, since every message pays for its bytes. Only characters
 * every queue takes: SQS refuses U+FFFE and U+FFFF, which JSON.stringify leaves as they are, and
 * fauxqs refuses every character beyond U+FFFF (SQS takes them: fauxqs tests UTF-16 units, not
 * characters). Those are written as JSON escapes, which decode to the same text, so an emoji in a
 * payload neither makes a shared message bounce nor sends its neighbours without their payloads.
 */
export function encodeMessage(message: DispatchMessage): string {
  const fields: (string | number)[] = [
    message.member,
    message.shard,
    message.gen,
    message.runAt,
    message.attempt,
  ];
  if (message.payload !== undefined) fields.push(message.payload);
  const body = JSON.stringify(fields);
  // They can only be inside strings (the rest of the body is ASCII), where an escape means the same.
  return REFUSED_BY_A_QUEUE.test(body) ? body.replace(REFUSED_BY_A_QUEUE_ALL, escapeUnit) : body;
}

/** Surrogates (halves of a character beyond U+FFFF; JSON.stringify escapes lone ones) and U+FFFE/U+FFFF. */
const REFUSED_BY_A_QUEUE = /[\uD800-\uDFFF\uFFFE\uFFFF]/;
const REFUSED_BY_A_QUEUE_ALL = new RegExp(REFUSED_BY_A_QUEUE.source, "g");

function escapeUnit(unit: string): string {
  return `\\u${unit.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/**
 * One queue body for several messages: their count, then each message as `encodeMessage` writes
 * it (`[3,["t/a",…],["t/b",…],["t/c",…]]`). The count comes first so a consumer can tell how many
 * events a body holds without parsing it (`eventsInBody`). Built from the encoded messages, so the
 * sender knows each one's size before it decides which share a body.
 */
export function encodeBundle(encoded: readonly string[]): string {
  return encoded.length === 1 ? encoded[0]! : `[${encoded.length},${encoded.join(",")}]`;
}

/** The bytes `encodeBundle` adds around `count` encoded messages (ASCII: the count, brackets, commas). */
export function bundleOverheadBytes(count: number): number {
  return count === 1 ? 0 : String(count).length + count + 2;
}

/** Decodes one message, or every message of a bundle; throws if any event of it is unreadable. */
export function decodeMessages(body: string): DispatchMessage[] {
  const { messages, unreadable } = decodeBody(body);
  if (unreadable > 0) throw new MalformedMessageError(body);
  return messages;
}

/** What a body holds: the messages that could be read, and how many events of it could not. */
export interface DecodedBody {
  readonly messages: DispatchMessage[];
  /** Elements of a bundle that are not messages Hourglass writes. */
  readonly unreadable: number;
}

/**
 * Decodes a body as the worker does: each event of a bundle on its own, so one element it cannot
 * read does not take its neighbours with it. Throws only when nothing in the body can be read.
 * The events it cannot read stay claimed in the index, and go out again when their lease ends.
 */
export function decodeBody(body: string): DecodedBody {
  const value = parse(body);
  if (!Array.isArray(value)) throw new MalformedMessageError(body);
  if (typeof value[0] !== "number") return { messages: [fromFields(value, body)], unreadable: 0 };
  const [count, ...elements] = value;
  // The count is what the consumer counted its slots by (`eventsInBody`): a body whose elements
  // do not match it, or whose count it could not read, is not one Hourglass wrote.
  if (count < 2 || count !== elements.length || eventsInBody(body) !== count) {
    throw new MalformedMessageError(body);
  }
  const messages: DispatchMessage[] = [];
  for (const fields of elements) {
    const message = readFields(fields);
    if (message) messages.push(message);
  }
  if (messages.length === 0) throw new MalformedMessageError(body);
  return { messages, unreadable: elements.length - messages.length };
}

/** Decodes a body that holds one message (not a bundle). */
export function decodeMessage(body: string): DispatchMessage {
  return fromFields(parse(body), body);
}

/**
 * How many events a body holds, read off its first characters (a bundle's count), without parsing
 * it: the local consumer counts its slots in events. A body that is not a bundle counts as one;
 * decoding it later says whether it is anything at all.
 */
export function eventsInBody(body: string): number {
  const count = /^\[(\d{1,4}),/.exec(body.slice(0, 6));
  return count ? Math.max(1, Number(count[1])) : 1;
}

function parse(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    throw new MalformedMessageError(body);
  }
}

function fromFields(value: unknown, body: string): DispatchMessage {
  const message = readFields(value);
  if (!message) throw new MalformedMessageError(body);
  return message;
}

function readFields(value: unknown): DispatchMessage | undefined {
  if (
    !Array.isArray(value) ||
    (value.length !== 5 && value.length !== 6) ||
    typeof value[0] !== "string" ||
    !value.slice(1, 5).every((n) => Number.isSafeInteger(n)) ||
    (value.length === 6 && typeof value[5] !== "string")
  ) {
    return undefined;
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
