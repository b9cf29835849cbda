/**
 * The proxy events as API Gateway sends them with IAM authorization. Written out rather than taken
 * from @types/aws-lambda, whose shapes are unions over every authorizer (its `identity` requires
 * `apiKey`, its 2.0 `principalOrgId` cannot be null) and so do not say exactly what arrives here.
 */

/** `requestContext.identity` of REST and payload-1.0 events for a SigV4 caller. */
export interface IamIdentityV1 {
  readonly accessKey: string;
  readonly accountId: string;
  readonly caller: string;
  readonly cognitoAmr?: null;
  readonly cognitoAuthenticationProvider: null;
  readonly cognitoAuthenticationType: null;
  readonly cognitoIdentityId: null;
  readonly cognitoIdentityPoolId: null;
  readonly principalOrgId: null;
  readonly sourceIp: string;
  readonly user: string;
  readonly userAgent: string | null;
  readonly userArn: string;
  /** REST with required API keys only. */
  readonly apiKey?: string;
  readonly apiKeyId?: string;
}

interface ProxyEventV1Base {
  readonly resource: string;
  readonly path: string;
  readonly httpMethod: string;
  readonly headers: Record<string, string>;
  readonly multiValueHeaders: Record<string, string[]>;
  readonly queryStringParameters: Record<string, string> | null;
  readonly multiValueQueryStringParameters: Record<string, string[]> | null;
  readonly pathParameters: Record<string, string> | null;
  readonly stageVariables: Record<string, string> | null;
  readonly body: string | null;
  readonly isBase64Encoded: boolean;
}

interface RequestContextV1Base {
  readonly accountId: string;
  readonly apiId: string;
  readonly domainName: string;
  readonly domainPrefix: string;
  readonly extendedRequestId: string;
  readonly httpMethod: string;
  readonly identity: IamIdentityV1;
  readonly path: string;
  readonly protocol: string;
  readonly requestId: string;
  readonly requestTime: string;
  readonly requestTimeEpoch: number;
  readonly resourceId: string;
  readonly resourcePath: string;
  readonly stage: string;
}

/** REST API proxy event (`LambdaRestApi`). */
export interface RestProxyEvent extends ProxyEventV1Base {
  readonly requestContext: RequestContextV1Base;
}

/** HTTP API, payload format 1.0. */
export interface HttpProxyEventV1 extends ProxyEventV1Base {
  readonly version: "1.0";
  readonly requestContext: RequestContextV1Base;
}

/** HTTP API, payload format 2.0, IAM authorizer. */
export interface HttpProxyEventV2 {
  readonly version: "2.0";
  readonly routeKey: string;
  readonly rawPath: string;
  readonly rawQueryString: string;
  readonly cookies?: string[];
  readonly headers: Record<string, string>;
  readonly queryStringParameters?: Record<string, string>;
  readonly requestContext: {
    readonly accountId: string;
    readonly apiId: string;
    readonly authorizer: {
      readonly iam: {
        readonly accessKey: string;
        readonly accountId: string;
        readonly callerId: string;
        readonly cognitoIdentity: null;
        readonly principalOrgId: null;
        readonly userArn: string;
        readonly userId: string;
      };
    };
    readonly domainName: string;
    readonly domainPrefix: string;
    readonly http: {
      readonly method: string;
      readonly path: string;
      readonly protocol: string;
      readonly sourceIp: string;
      readonly userAgent: string;
    };
    readonly requestId: string;
    readonly routeKey: string;
    readonly stage: string;
    readonly time: string;
    readonly timeEpoch: number;
  };
  readonly body?: string;
  readonly isBase64Encoded: boolean;
}

export type ProxyEvent = RestProxyEvent | HttpProxyEventV1 | HttpProxyEventV2;
