import type { Protocol } from "./protocols.ts";

/**
 * The services the gateway stands in for, by SigV4 signing name, and how each one is spoken: the
 * `X-Amz-Target` prefix of its JSON protocol, the XML namespace of its query protocol, or REST.
 * The protocols are the ones the SDK versions in this repository use (read from each client's
 * `runtimeConfig.shared.js`): CloudWatch 3.1164 speaks JSON 1.0, not CBOR or query.
 */
export type ServiceName =
  | "dynamodb"
  | "sqs"
  | "secretsmanager"
  | "events"
  | "scheduler"
  | "cloudformation"
  | "monitoring"
  | "lambda";

export interface ServiceSpec {
  /** The IAM action prefix, which is not always the signing name ("monitoring" → "cloudwatch"). */
  readonly iamPrefix: string;
  readonly json?: {
    readonly targetPrefix: string;
    readonly version: "1.0" | "1.1";
    /** Sends `x-amzn-query-mode` and reads `x-amzn-query-error` (a service moved off awsQuery). */
    readonly queryCompatible: boolean;
    /** Its access-denied status over JSON: 400 for DynamoDB and friends, 403 for former query services. */
    readonly deniedStatus: number;
    /** Whether AWS names its coral errors with the `com.amazon.coral.service#` namespace. */
    readonly coralNamespace: boolean;
  };
  readonly queryXmlns?: string;
  readonly rest?: true;
}

export const SERVICES: Readonly<Record<ServiceName, ServiceSpec>> = {
  dynamodb: {
    iamPrefix: "dynamodb",
    json: {
      targetPrefix: "DynamoDB_20120810",
      version: "1.0",
      queryCompatible: false,
      deniedStatus: 400,
      coralNamespace: true,
    },
  },
  sqs: {
    iamPrefix: "sqs",
    json: {
      targetPrefix: "AmazonSQS",
      version: "1.0",
      queryCompatible: true,
      deniedStatus: 403,
      coralNamespace: true,
    },
    queryXmlns: "http://queue.amazonaws.com/doc/2012-11-05/",
  },
  secretsmanager: {
    iamPrefix: "secretsmanager",
    json: {
      targetPrefix: "secretsmanager",
      version: "1.1",
      queryCompatible: false,
      deniedStatus: 400,
      coralNamespace: false,
    },
  },
  events: {
    iamPrefix: "events",
    json: {
      targetPrefix: "AWSEvents",
      version: "1.1",
      queryCompatible: false,
      deniedStatus: 400,
      coralNamespace: false,
    },
  },
  scheduler: { iamPrefix: "scheduler", rest: true },
  cloudformation: {
    iamPrefix: "cloudformation",
    queryXmlns: "http://cloudformation.amazonaws.com/doc/2010-05-15/",
  },
  monitoring: {
    iamPrefix: "cloudwatch",
    json: {
      targetPrefix: "GraniteServiceVersion20100801",
      version: "1.0",
      queryCompatible: true,
      deniedStatus: 403,
      coralNamespace: true,
    },
    queryXmlns: "http://monitoring.amazonaws.com/doc/2010-08-01/",
  },
  lambda: { iamPrefix: "lambda", rest: true },
};

export function isServiceName(name: string): name is ServiceName {
  return Object.hasOwn(SERVICES, name);
}

/** The protocol a request to `service` uses, from its `X-Amz-Target` and content type. */
export function protocolOf(
  service: ServiceName,
  target: string | undefined,
  contentType: string | undefined,
): Protocol | undefined {
  const spec = SERVICES[service];
  if (spec.json && target?.startsWith(`${spec.json.targetPrefix}.`)) {
    return { kind: "json", version: spec.json.version, queryCompatible: spec.json.queryCompatible };
  }
  if (spec.queryXmlns && (contentType ?? "").includes("x-www-form-urlencoded")) {
    return { kind: "query", xmlns: spec.queryXmlns };
  }
  if (spec.rest) return { kind: "rest-json" };
  return undefined;
}
