/**
 * Who is calling, and which service they signed for, read from the SigV4 credential scope
 * (`Credential=AKID/20261205/us-east-1/dynamodb/aws4_request`). The signature itself is not checked:
 * every caller is one of the harness's own functions, and the scope is all IAM needs to know who.
 */
export interface CredentialScope {
  readonly accessKeyId: string;
  readonly date: string;
  readonly region: string;
  /** The signing name: "dynamodb", "sqs", "monitoring" (CloudWatch), "events" (EventBridge), … */
  readonly service: string;
}

const SCOPE = /^([^/\s,]+)\/(\d{8})\/([^/\s,]+)\/([^/\s,]+)\/aws4_request$/;
const HEADER_CREDENTIAL = /Credential=([^,\s]+)/;

/** The scope from the `Authorization` header, or from `X-Amz-Credential` of a presigned URL. */
export function credentialScope(
  authorization: string | undefined,
  query: URLSearchParams,
): CredentialScope | undefined {
  const credential = authorization
    ? HEADER_CREDENTIAL.exec(authorization)?.[1]
    : (query.get("X-Amz-Credential") ?? undefined);
  if (!credential) return undefined;
  const [, accessKeyId, date, region, service] = SCOPE.exec(credential) ?? [];
  if (!accessKeyId || !date || !region || !service) return undefined;
  return { accessKeyId, date, region, service };
}
