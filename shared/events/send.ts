import type { DispatchMessage } from "../model/message.ts";
import type { EngineDeps } from "./deps.ts";

/**
 * How soon an event whose message could not be sent is sent again. Its dispatch lease is given
 * back to run out this much later, so the next dispatcher tick after that resends it: without
 * this, a failed send waits for the whole dispatch lease (30 s locally, 5 min on AWS), and a
 * tick a moment later does not spin on a queue that is down.
 */
export const RESEND_AFTER_MS = 1_000;

/**
 * Sends dispatched messages. A message the queue refused stays leased in the index (nothing is
 * lost), and its lease is shortened so it is sent again soon. Returns how many were sent.
 */
export async function sendOrRelease(
  deps: Pick<EngineDeps, "transport" | "index" | "logger">,
  messages: readonly DispatchMessage[],
  now: number,
): Promise<{ sent: number; failed: number }> {
  if (messages.length === 0) return { sent: 0, failed: 0 };
  const report = await deps.transport.send(messages, now);
  if (report.failed.length > 0) {
    for (const { message, reason } of report.failed) {
      deps.logger.warn("send failed; will send again at the next dispatch", {
        event: message.member,
        reason,
      });
    }
    await deps.index.release(
      report.failed.map((f) => f.message),
      now + RESEND_AFTER_MS,
    );
  }
  return { sent: report.sent, failed: report.failed.length };
}
