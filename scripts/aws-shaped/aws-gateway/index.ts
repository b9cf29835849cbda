/** The AWS gateway of the AWS-shaped local mode: one endpoint for every AWS API the functions call. */

export { GatewayConfigError, PolicyEvaluationError } from "./errors.ts";
export { startAwsGateway } from "./gateway.ts";
export {
  AWS_LATENCY,
  type AwsLatencyModel,
  awsLatency,
  awsLatencyModel,
  REDIS_LATENCY,
  redisLatency,
} from "./latency.ts";
export type {
  AwsGateway,
  Decision,
  GatewayOptions,
  GatewayPrincipal,
  IamPolicyDocument,
  LambdaInvocationResult,
  PublishedEntry,
  RecordedCall,
  ScheduleState,
  SeededSchedule,
  SeededStack,
} from "./types.ts";
