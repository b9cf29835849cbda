import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { SQSClient } from "@aws-sdk/client-sqs";

/** Endpoints and region come from the SDK's standard variables (AWS_ENDPOINT_URL_DYNAMODB, …). */
export function createDynamoClient(): DynamoDBClient {
  return new DynamoDBClient({});
}

/**
 * Queue URLs from emulators name hosts that do not resolve (`sqs.us-east-1.localhost`), and the SDK
 * would send to the queue URL's host. On AWS both agree, so sending to the resolved endpoint is
 * right everywhere.
 *
 * `verifyMd5: false` skips the SDK's MD5 of every body sent and received. The local runtime turns
 * it off: its queue is an emulator on loopback, where no network can corrupt a body, and the check
 * cost about a third of the SDK's CPU per message received (docs/benchmarks.md). On AWS it stays on
 * (the default), and Lambda's event source, which hands the worker its messages there, is AWS's.
 */
export function createSqsClient(options: { readonly verifyMd5?: boolean } = {}): SQSClient {
  return new SQSClient({ useQueueUrlAsEndpoint: false, ...(options.verifyMd5 === false && { md5: false }) });
}
