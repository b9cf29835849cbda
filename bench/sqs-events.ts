import { eventsInBody } from "../shared/model/message.ts";

/**
 * Events an SQS call carried, for the benchmarks' per-phase timelines: a queue message may hold
 * several events due in the same second (`eventsPerMessage`), so messages are not events. A delete
 * names only receipt handles, so the events of each received message are remembered until then
 * (one counter per process, as each process receives and deletes its own messages).
 */
export class SqsEventCounter {
  private readonly byReceipt = new Map<string, number>();

  /** Events in the call's messages; 1 for a call of any other kind. */
  count(command: string, input: unknown, output: unknown): number {
    switch (command) {
      case "SendMessageBatch":
        return sum((input as { Entries?: { MessageBody?: string }[] }).Entries, (e) => events(e.MessageBody));
      case "SendMessage":
        return events((input as { MessageBody?: string }).MessageBody);
      case "ReceiveMessage":
        return sum(
          (output as { Messages?: { Body?: string; ReceiptHandle?: string }[] } | undefined)?.Messages,
          (m) => {
            const n = events(m.Body);
            if (m.ReceiptHandle) this.byReceipt.set(m.ReceiptHandle, n);
            return n;
          },
        );
      case "DeleteMessageBatch":
        return sum((input as { Entries?: { ReceiptHandle?: string }[] }).Entries, (e) => {
          const n = this.byReceipt.get(e.ReceiptHandle ?? "") ?? 1;
          this.byReceipt.delete(e.ReceiptHandle ?? "");
          return n;
        });
      default:
        return (input as { Entries?: unknown[] }).Entries?.length ?? 1;
    }
  }
}

function events(body: string | undefined): number {
  return body === undefined ? 1 : eventsInBody(body);
}

function sum<T>(items: readonly T[] | undefined, of: (item: T) => number): number {
  return (items ?? []).reduce((total, item) => total + of(item), 0);
}
