import type { DispatchMessage } from "../events/model.ts";

export interface SendReport {
  /** Members whose message was accepted by the queue. */
  readonly sent: number;
  /** Messages the queue refused or that could not be sent; they stay leased and are redelivered. */
  readonly failed: readonly { readonly message: DispatchMessage; readonly reason: string }[];
}

/**
 * Where dispatched events go. SQS in every mode a user runs; an in-process transport exists only so
 * the benchmark can measure the engine without a queue in between.
 */
export interface Transport {
  send(messages: readonly DispatchMessage[], now: number): Promise<SendReport>;
}

/** SQS's own limit; the emulator accepts 901, so it is enforced here. */
export const MAX_DELAY_SECONDS = 900;

/** Whole seconds until due, clamped to what SQS allows. The worker waits out the remainder. */
export function delaySecondsFor(runAt: number, now: number): number {
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor((runAt - now) / 1000)));
}

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

export class MalformedMessageError extends Error {
  constructor(readonly body: string) {
    super(`not an Hourglass dispatch message: ${body.slice(0, 200)}`);
    this.name = "MalformedMessageError";
  }
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
