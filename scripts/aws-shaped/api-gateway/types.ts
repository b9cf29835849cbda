/**
 * The API Gateway emulator's public shapes. The two kinds are the two APIs the template can hold
 * (infra/construct/compute.ts): the standard profile's REST API (`LambdaRestApi`, stage `api`) and the
 * lean profile's HTTP API (`$default` stage), whose Lambda integration's `PayloadFormatVersion` decides
 * the event's shape.
 */
export type ApiKind =
  | {
      readonly api: "rest";
      readonly stage: string;
      /**
       * Every method has `ApiKeyRequired` (the construct's `apiKeys`): a request without `x-api-key`
       * is refused. AWS generates the key values, so locally any value is accepted; the function
       * sees it in `identity.apiKey`. Usage-plan throttling is not emulated.
       */
      readonly apiKeys?: boolean;
      /**
       * The RestApi's `BinaryMediaTypes` (none in this template). Without a match, a request body
       * reaches the function as UTF-8 text and an `isBase64Encoded` result goes back as the base64
       * text itself, as on AWS.
       */
      readonly binaryMediaTypes?: readonly string[];
    }
  | { readonly api: "http"; readonly payloadFormat: "1.0" | "2.0" };

/** One access key the emulator knows: its secret, and the caller API Gateway reports for it. */
export interface CallerKey {
  readonly secretAccessKey: string;
  /** `arn:aws:iam::000000000000:user/alice`, `arn:aws:sts::000000000000:assumed-role/Ops/session`… */
  readonly arn: string;
  /** Temporary credentials: the request must carry this `x-amz-security-token`. */
  readonly sessionToken?: string;
}

export interface ApiGatewayOptions {
  readonly kind: ApiKind;
  readonly region: string;
  readonly accountId: string;
  readonly apiId: string;
  /**
   * Access key id → caller. With keys, a request signed with an unknown key is refused and a known
   * one has its signature recomputed and compared. Undefined: any key is accepted as the IAM user
   * named after its access key id; its secret is unknown, so everything but the signature itself is
   * checked (see signature.ts).
   */
  readonly keys?: ReadonlyMap<string, CallerKey>;
  /**
   * What a key that is not in `keys` signs as: refused (API Gateway's answer to a key IAM does not
   * know), or the IAM user named after it, unverified. @default "refuse" with keys, "accept-as-user" without
   */
  readonly unknownKeys?: "refuse" | "accept-as-user";
  /** Runs the API Lambda with the event; resolves its result, rejects on a function error/timeout. */
  readonly invoke: (event: unknown) => Promise<unknown>;
  /** Integration timeout in ms; default per kind (29 000 REST, 30 000 HTTP). */
  readonly timeoutMs?: number;
  /** 0 (the default) = any free port; the host is always 127.0.0.1. */
  readonly port?: number;
}

export interface ApiGateway {
  /** The base URL clients use: `http://127.0.0.1:PORT/api/` for REST, `http://127.0.0.1:PORT/` for HTTP. */
  readonly url: string;
  stop(): Promise<void>;
}
