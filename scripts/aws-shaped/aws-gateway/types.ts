/**
 * The gateway's contract with the rest of the AWS-shaped harness: who may call, what it answers on
 * AWS's behalf, and what it reports back. The template reader, the Lambda process host and the
 * API Gateway emulator code against these shapes.
 */

export interface IamPolicyDocument {
  readonly Version?: string;
  readonly Statement: unknown[] | unknown;
}

export interface GatewayPrincipal {
  /** "api" | "dispatcher" | "worker" | "operator" … used in records */
  readonly name: string;
  /** ARN used as the IAM principal, e.g. arn:aws:iam::000000000000:role/HourglassApiRole */
  readonly arn: string;
  readonly policies: readonly { readonly name: string; readonly document: IamPolicyDocument }[];
}

export type Decision = "Allowed" | "ImplicitlyDenied" | "ExplicitlyDenied";

export interface RecordedCall {
  readonly at: number;
  readonly principal: string;
  /** The SigV4 signing name of the call ("dynamodb", "sqs", "monitoring", …). */
  readonly service: string;
  /** e.g. "dynamodb:PutItem" */
  readonly action: string;
  readonly resource: string;
  /** the API operation as called, e.g. "TransactWriteItems" */
  readonly operation: string;
  readonly decision: Decision;
  /**
   * Set when the gateway refused the call before IAM could decide (an unknown access key, service
   * or operation, or a policy the simulator rejects); the decision is then "ImplicitlyDenied".
   */
  readonly refusal?: string;
}

export interface PublishedEntry {
  readonly at: number;
  readonly principal: string;
  readonly entry: Record<string, unknown>;
}

export type ScheduleState = "ENABLED" | "DISABLED";

export interface SeededSchedule {
  readonly name: string;
  readonly group: string;
  readonly state: ScheduleState;
  readonly expression: string;
  readonly targetArn: string;
  readonly roleArn: string;
}

export interface SeededStack {
  readonly name: string;
  /** The stack id ARN (`arn:aws:cloudformation:…:stack/NAME/GUID`), or just its GUID. */
  readonly stackId: string;
  readonly outputs: Readonly<Record<string, string>>;
}

export interface LambdaInvocationResult {
  readonly statusCode: number;
  readonly payload: Uint8Array;
  readonly functionError?: string;
}

export interface GatewayOptions {
  readonly region: string;
  readonly accountId: string;
  readonly dynamoEndpoint: string;
  readonly sqsEndpoint: string;
  /** access key id → principal */
  readonly principals: ReadonlyMap<string, GatewayPrincipal>;
  /** secret ARN → SecretString */
  readonly secrets: ReadonlyMap<string, string>;
  readonly stacks?: readonly SeededStack[];
  readonly schedules?: readonly SeededSchedule[];
  readonly alarms?: readonly string[];
  readonly invokeLambda?: (functionArn: string, payload: Uint8Array) => Promise<LambdaInvocationResult>;
  /** per-call delay in ms by service ("dynamodb", "sqs", …); undefined → none */
  readonly latency?: (service: string) => number;
  /** deny what IAM denies (default true); false only records */
  readonly enforce?: boolean;
  /** default 0 (any free port); the host is always 127.0.0.1 */
  readonly port?: number;
}

export interface AwsGateway {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  calls(): readonly RecordedCall[];
  denied(): readonly RecordedCall[];
  published(): readonly PublishedEntry[];
  scheduleState(group: string, name: string): ScheduleState | undefined;
  onScheduleChange(listener: (group: string, name: string, state: ScheduleState) => void): void;
  stop(): Promise<void>;
}
