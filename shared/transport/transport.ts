import type { DispatchMessage } from "../model/message.ts";

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

/**
 * Whole seconds until the message should become visible, `aheadMs` before it is due (within the
 * whole second below), clamped to what SQS allows. The worker waits out the remainder, so a message
 * delivered early never starts early.
 */
export function delaySecondsFor(runAt: number, now: number, aheadMs = 0): number {
  return Math.min(MAX_DELAY_SECONDS, Math.max(0, Math.floor((runAt - now - aheadMs) / 1000)));
}
