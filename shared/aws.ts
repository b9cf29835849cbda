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
 */
export function createSqsClient(): SQSClient {
  return new SQSClient({ useQueueUrlAsEndpoint: false });
}
