/**
 * Every price `npm run cost` uses: us-east-1, on demand, no free tier unless the line says so.
 * Each carries where it was read and when; `assumption` marks a figure that is ours, not a price
 * list's. Prices move: recheck the sources before deciding, and change them here only.
 */
export interface Price {
  readonly usd: number;
  readonly unit: string;
  readonly source: string;
  readonly seen: string;
  readonly assumption?: string;
}

const SEEN = "2026-12-05";
const price = (usd: number, unit: string, source: string, assumption?: string): Price => ({
  usd,
  unit,
  source,
  seen: SEEN,
  ...(assumption && { assumption }),
});

const VPC = "https://aws.amazon.com/vpc/pricing/";
const EC2 = "https://aws.amazon.com/ec2/pricing/on-demand/";
const ELASTICACHE = "https://aws.amazon.com/elasticache/pricing/";
const CLOUDWATCH = "https://aws.amazon.com/cloudwatch/pricing/";
const LAMBDA = "https://aws.amazon.com/lambda/pricing/";
const DYNAMODB = "https://aws.amazon.com/dynamodb/pricing/on-demand/";

export const HOURS_PER_MONTH = 730;
export const SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600;

export const PRICES = {
  natGatewayHour: price(0.045, "per NAT gateway-hour", VPC),
  natGatewayGb: price(0.045, "per GB processed by a NAT gateway", VPC),
  publicIpv4Hour: price(0.005, "per public IPv4 address-hour (Elastic IP or auto-assigned)", VPC),
  interfaceEndpointHour: price(
    0.01,
    "per interface endpoint-hour, per AZ (subnet)",
    "https://aws.amazon.com/privatelink/pricing/",
  ),
  ebsGp3GbMonth: price(0.08, "per GB-month of gp3", "https://aws.amazon.com/ebs/pricing/"),
  dynamoWriteUnit: price(0.625 / 1e6, "per write request unit, on demand", DYNAMODB),
  dynamoReadUnit: price(0.125 / 1e6, "per read request unit, on demand", DYNAMODB),
  dynamoStorageGbMonth: price(0.25, "per GB-month stored (Standard table class)", DYNAMODB),
  dynamoPitrGbMonth: price(0.2, "per GB-month, point-in-time recovery", DYNAMODB),
  sqsRequest: price(
    0.4 / 1e6,
    "per SQS request (standard queue, 64 KB chunks)",
    "https://aws.amazon.com/sqs/pricing/",
  ),
  lambdaRequest: price(0.2 / 1e6, "per Lambda request", LAMBDA),
  lambdaArmGbSecond: price(0.0000133334, "per GB-second, arm64", LAMBDA),
  lambdaX86GbSecond: price(0.0000166667, "per GB-second, x86_64", LAMBDA),
  restApiRequest: price(
    3.5 / 1e6,
    "per REST API request (first 333M)",
    "https://aws.amazon.com/api-gateway/pricing/",
  ),
  httpApiRequest: price(
    1.0 / 1e6,
    "per HTTP API request (first 300M)",
    "https://aws.amazon.com/api-gateway/pricing/",
  ),
  serverlessValkeyGbHour: price(0.084, "per GB-hour stored, ElastiCache Serverless for Valkey", ELASTICACHE),
  serverlessValkeyMinimumGb: price(
    0.1,
    "GB metered at least (Valkey)",
    "https://cur.vantage.sh/aws/amazonelasticache",
  ),
  serverlessRedisGbHour: price(
    0.125,
    "per GB-hour stored, ElastiCache Serverless for Redis OSS",
    ELASTICACHE,
  ),
  serverlessRedisMinimumGb: price(
    1,
    "GB metered at least (Redis OSS)",
    "https://cur.vantage.sh/aws/amazonelasticache",
  ),
  serverlessValkeyEcpu: price(0.0023 / 1e6, "per ECPU, Valkey", ELASTICACHE),
  serverlessRedisEcpu: price(0.0034 / 1e6, "per ECPU, Redis OSS", ELASTICACHE),
  secretMonth: price(0.4, "per secret-month", "https://aws.amazon.com/secrets-manager/pricing/"),
  kmsKeyMonth: price(1, "per customer managed KMS key-month", "https://aws.amazon.com/kms/pricing/"),
  alarmMetricMonth: price(0.1, "per standard-resolution alarm metric-month", CLOUDWATCH),
  highResolutionAlarmMetricMonth: price(
    0.3,
    "per high-resolution alarm metric-month (period < 60 s)",
    CLOUDWATCH,
  ),
  dashboardMonth: price(3, "per dashboard-month (an account's first 3 are free; counted here)", CLOUDWATCH),
  customMetricMonth: price(0.3, "per custom metric-month (first 10,000)", CLOUDWATCH),
  logIngestionGb: price(0.5, "per GB of logs ingested (Standard class)", CLOUDWATCH),
  xrayTrace: price(5 / 1e6, "per trace recorded", "https://aws.amazon.com/xray/pricing/"),
  eventBridgeEvent: price(
    1 / 1e6,
    "per custom event published (each 64 KB chunk; billed per entry, not per PutEvents call)",
    "https://aws.amazon.com/eventbridge/pricing/",
  ),
  schedulerInvocation: price(
    1 / 1e6,
    "per EventBridge Scheduler invocation after the first 14M a month",
    "https://aws.amazon.com/eventbridge/pricing/",
  ),
  schedulerFreeInvocations: price(
    14e6,
    "invocations a month free (EventBridge Scheduler, every account)",
    "https://aws.amazon.com/eventbridge/pricing/",
  ),
  qstashMessage: price(
    1 / 1e5,
    "per message, QStash pay as you go ($1 per 100K)",
    "https://upstash.com/pricing/qstash",
  ),
} as const;

/** Quantities the price lists set (minimums, free tiers): not dollars. */
export const TERMS = {
  serverlessValkeyMinimumGb: price(
    0.1,
    "GB of data metered at least, Serverless for Valkey",
    "https://cur.vantage.sh/aws/amazonelasticache",
  ),
  serverlessRedisMinimumGb: price(
    1,
    "GB of data metered at least, Serverless for Redis OSS",
    "https://cur.vantage.sh/aws/amazonelasticache",
  ),
  schedulerFreeInvocations: price(
    14e6,
    "EventBridge Scheduler invocations a month free, every account",
    "https://aws.amazon.com/eventbridge/pricing/",
  ),
  defaultRootVolumeGb: price(
    8,
    "GB root volume of a NAT instance the template does not size",
    EC2,
    "Amazon Linux 2023's default",
  ),
} as const;

/** On-demand hourly price per instance type: NAT instances. */
export const EC2_INSTANCE_HOUR: Readonly<Record<string, Price>> = {
  "t4g.nano": price(0.0042, "per hour", "https://fck-nat.dev (quoting the EC2 on-demand price list)"),
  "t4g.micro": price(0.0084, "per hour", EC2),
  "t4g.small": price(0.0168, "per hour", EC2),
  "t3.nano": price(0.0052, "per hour", EC2),
  "t3.micro": price(0.0104, "per hour", EC2),
};

/** On-demand hourly price per cache node, Valkey (20% below Redis OSS for the same node). */
export const VALKEY_NODE_HOUR: Readonly<Record<string, Price>> = {
  "cache.t4g.micro": price(0.0128, "per node-hour, Valkey", ELASTICACHE),
  "cache.t4g.small": price(0.0256, "per node-hour, Valkey", ELASTICACHE),
  "cache.t4g.medium": price(0.052, "per node-hour, Valkey", ELASTICACHE),
  "cache.r7g.large": price(0.1752, "per node-hour, Valkey", ELASTICACHE),
};
export const REDIS_OVER_VALKEY = 1.25;

/**
 * What the bill cannot read from a template or a measurement: each is ours, stated in the document.
 */
export const ASSUMPTIONS = {
  /** Lambda's SQS pollers long-poll an idle queue: five pollers, 20 s waits. */
  idlePollers: 5,
  pollWaitSeconds: 20,
  /** A journal item with its index entries, the payload compressed (docs/cost.md, issue 13). */
  journalBytesPerJob: 1_100,
  /** Finished events stay in the journal for 30 days, plus the average delay (one day). */
  journalDaysRetained: 31,
  /** Redis holds only events due within the index horizon: the id, score and metadata. */
  redisBytesPerPendingEvent: 300,
  /** Index commands per job (create, claim, start, ack), about 1 KB each. */
  ecpusPerJob: 10,
  /** Function logs per job: access log, REPORT and the handler's lines. */
  logBytesPerJob: { single: 1_000, batch: 300 },
  /** Lambda's active tracing: the first request each second and 5% of the rest, per function. */
  xraySampledShare: 0.05,
  /** The comparison's sender: EventBridge Scheduler invokes a 128 MB arm64 Lambda that POSTs the webhook. */
  senderMemoryMb: 128,
  senderMs: 300,
  /** Client batches on the batch path. */
  batchSize: 500,
} as const;
