import { SendMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { DispatchMessage } from "../events/model.ts";
import { delaySecondsFor, encodeMessage, type SendReport, type Transport } from "./transport.ts";

/** SendMessageBatch takes at most 10 entries. */
const BATCH = 10;

/** Sends dispatched events to the SQS work queue, 10 per call, several calls in flight. */
export class SqsTransport implements Transport {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly inFlight = 8,
  ) {}

  async send(messages: readonly DispatchMessage[], now: number): Promise<SendReport> {
    const batches: DispatchMessage[][] = [];
    for (let i = 0; i < messages.length; i += BATCH) batches.push(messages.slice(i, i + BATCH));
    let sent = 0;
    const failed: { message: DispatchMessage; reason: string }[] = [];
    let next = 0;
    const runner = async () => {
      while (next < batches.length) {
        const batch = batches[next++]!;
        try {
          const reply = await this.client.send(
            new SendMessageBatchCommand({
              QueueUrl: this.queueUrl,
              Entries: batch.map((message, i) => ({
                Id: String(i),
                MessageBody: encodeMessage(message),
                DelaySeconds: delaySecondsFor(message.runAt, now),
              })),
            }),
          );
          sent += reply.Successful?.length ?? 0;
          for (const failure of reply.Failed ?? []) {
            failed.push({
              message: batch[Number(failure.Id)]!,
              reason: failure.Message ?? failure.Code ?? "failed",
            });
          }
        } catch (error) {
          for (const message of batch) failed.push({ message, reason: (error as Error).message });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.inFlight, batches.length) }, runner));
    return { sent, failed };
  }
}
