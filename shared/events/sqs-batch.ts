import { BatchProcessor, EventType, processPartialResponse } from "@aws-lambda-powertools/batch";
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { Logger } from "../logger.ts";
import { MalformedMessageError } from "../model/errors.ts";
import { type DispatchMessage, decodeBody } from "../model/message.ts";
import type { Worker, WorkResult } from "./worker.ts";

/**
 * Turns an SQS batch into worker calls, with Powertools' partial batch response: only the records
 * whose processing threw (an infrastructure failure) go back to the queue. Handler failures never
 * throw here; the worker retries those itself. The Lambda handler and the local poller share it.
 * A record may hold several events (a bundle, config `eventsPerMessage`): it fails if any of them
 * did.
 */
export function createSqsBatchHandler(
  worker: Worker,
  logger: Logger,
  onResult?: (result: WorkResult) => void,
) {
  const one = async (item: SQSRecord, message: DispatchMessage, deadline: number) => {
    try {
      // Not `onResult?.(await …)`: an optional call skips evaluating its arguments when undefined.
      const result = await worker.process(message, deadline);
      onResult?.(result);
    } catch (error) {
      // Goes back to the queue (partial batch response); say why, or nobody will know.
      logger.error("message failed; the queue will redeliver it", {
        messageId: item.messageId,
        event: message.member,
        error,
      });
      throw error;
    }
  };
  const record = async (item: SQSRecord, deadline: number) => {
    let messages: DispatchMessage[];
    try {
      const decoded = decodeBody(item.body);
      messages = decoded.messages;
      if (decoded.unreadable > 0) {
        // Their events stay claimed in the index and go out again when the claim's lease ends.
        logger.error("unreadable events of a shared message set aside", {
          messageId: item.messageId,
          unreadable: decoded.unreadable,
          readable: messages.length,
        });
      }
    } catch (error) {
      if (!(error instanceof MalformedMessageError)) throw error;
      // Retrying cannot make it readable; keep it out of the redrive loop.
      logger.error("malformed message dropped", { messageId: item.messageId, error });
      return;
    }
    if (messages.length === 1) return one(item, messages[0]!, deadline);
    // A bundle: every event runs on its own, and the message goes back to the queue if any of
    // them failed to be recorded. Its redelivery drops the events already finished (their
    // generation has moved on in the index), so only the unfinished ones run again.
    const settled = await Promise.allSettled(messages.map((message) => one(item, message, deadline)));
    const failure = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failure) throw failure.reason;
  };
  return async (event: SQSEvent, context?: Context): Promise<SQSBatchResponse> => {
    const deadline = context ? Date.now() + context.getRemainingTimeInMillis() : Number.POSITIVE_INFINITY;
    const [only, ...others] = event.Records;
    if (only && others.length === 0) {
      // One record (the local poller hands them over one at a time, thousands a second in a
      // burst): what the processor answers for one record, without its per-call setup, 3-4% of a
      // worker's CPU there. Batches of more go through the processor below.
      try {
        await record(only, deadline);
        return { batchItemFailures: [] };
      } catch {
        return { batchItemFailures: [{ itemIdentifier: only.messageId }] };
      }
    }
    // One processor per call: outside Lambda its state (records, failures, the response) lives on
    // the instance, and the local poller runs several batches at once. A shared one let a later
    // batch reset an earlier one's failures, which were then deleted as if they had succeeded.
    const processor = new BatchProcessor(EventType.SQS);
    return processPartialResponse(event, (item: SQSRecord) => record(item, deadline), processor, {
      ...(context && { context }),
      throwOnFullBatchFailure: false,
      processInParallel: true,
    });
  };
}
