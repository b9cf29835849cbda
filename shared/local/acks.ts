import { DeleteMessageBatchCommand, type SQSClient } from "@aws-sdk/client-sqs";
import type { Logger } from "../logger.ts";

/** SQS takes at most ten entries in one `DeleteMessageBatch`. */
export const DELETE_BATCH_LIMIT = 10;

/**
 * Deletes handled messages from the queue in batches of up to ten, whichever receive they came
 * from. A message is added only once its outcome is recorded (the caller's rule), so a crash
 * before a flush means a redelivery, never a loss. A full batch goes at once; a partial one waits
 * `lingerMs` for company. A failed delete is logged and left: the message comes back after its
 * visibility timeout and the worker finds it already finished.
 *
 * fauxqs reports success for receipt handles it does not know, so nothing here relies on the
 * reply to decide what was deleted: each handle is sent exactly once.
 */
export class AckBuffer {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly sending = new Set<Promise<void>>();
  /** Receipt handles sent in a `DeleteMessageBatch` that SQS accepted. */
  deleted = 0;

  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly logger: Logger,
    private readonly lingerMs = 20,
  ) {}

  add(receiptHandle: string): void {
    this.pending.push(receiptHandle);
    if (this.pending.length >= DELETE_BATCH_LIMIT) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.lingerMs);
  }

  /** Sends everything pending now and waits for every delete in flight. */
  async drain(): Promise<void> {
    this.flush();
    await Promise.all(this.sending);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.pending.length > 0) {
      const handles = this.pending.splice(0, DELETE_BATCH_LIMIT);
      const sent = this.send(handles).finally(() => this.sending.delete(sent));
      this.sending.add(sent);
    }
  }

  private async send(handles: string[]): Promise<void> {
    try {
      const reply = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: handles.map((ReceiptHandle, i) => ({ Id: String(i), ReceiptHandle })),
        }),
      );
      this.deleted += reply.Successful?.length ?? 0;
      if (reply.Failed?.length) {
        this.logger.warn("delete failed; the message will be redelivered", {
          count: reply.Failed.length,
          codes: [...new Set(reply.Failed.map((f) => f.Code))],
        });
      }
    } catch (error) {
      this.logger.warn("delete failed; the messages will be redelivered", { count: handles.length, error });
    }
  }
}
