import type { DispatchMessage } from "../model/message.ts";
import type { SendReport, Transport } from "./transport.ts";

/**
 * Delivers messages to a callback in this process, at the same whole second SQS would (runAt
 * rounded down), so the worker's own wait for the sub-second remainder is exercised too. For the
 * engine benchmark only: nothing survives a crash.
 */
export class InProcessTransport implements Transport {
  constructor(private readonly deliver: (message: DispatchMessage) => void) {}

  async send(messages: readonly DispatchMessage[], now: number): Promise<SendReport> {
    for (const message of messages) {
      const delay = Math.max(0, Math.floor((message.runAt - now) / 1000) * 1000);
      setTimeout(() => this.deliver(message), delay);
    }
    return { sent: messages.length, failed: [] };
  }
}
