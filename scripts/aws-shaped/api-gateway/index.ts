/**
 * The API Gateway emulator of the AWS-shaped mode: SigV4 (`AWS_IAM`) at the door, the Lambda proxy
 * event of the template's API kind, and API Gateway's own answers when it refuses or the function fails.
 */
export { loadCallerKeys } from "./caller-keys.ts";
export { CallerKeysFileError, InvocationError } from "./errors.ts";
export type { HttpProxyEventV1, HttpProxyEventV2, ProxyEvent, RestProxyEvent } from "./event-types.ts";
export { startApiGateway } from "./server.ts";
export type { ApiGateway, ApiGatewayOptions, ApiKind, CallerKey } from "./types.ts";
