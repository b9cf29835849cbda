import { uniformFloat64 } from "pure-rand/distribution/uniformFloat64";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";
import type { RandomGenerator } from "pure-rand/types/RandomGenerator";

/**
 * How long a call to each AWS service takes from inside a Lambda function in the same region, as
 * a log-normal per service: fixed by its median and its 99th percentile, a long right tail and
 * never below zero, which is the usual shape of network service latency. The figures, and where
 * they come from:
 *
 * - DynamoDB, median 4 ms, p99 10 ms. AWS: "Amazon DynamoDB is a serverless, NoSQL, fully managed
 *   database with single-digit millisecond performance at any scale."
 *   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Introduction.html
 * - SQS, median 20 ms, p99 150 ms. AWS, answering "What is the typical latency for Amazon SQS?":
 *   "Typical latencies for SendMessage, ReceiveMessage, and DeleteMessage API requests are in the
 *   tens or low hundreds of milliseconds." https://aws.amazon.com/sqs/faqs/ . A measurement from
 *   m5.xlarge EC2 instances of the time a thread waits on ReceiveMessage for a batch: "p50 is 80ms,
 *   as measured on AWS EC2 instances" (tables: p50 47 to 77 ms, p999 0.5 to 1.8 s),
 *   https://github.com/privacysandbox/protected-auction-key-value-service/blob/main/docs/data_loading/realtime_updates_capabilities.md .
 *   That wait includes waiting for messages; a send or delete is one request, so the median sits
 *   at the low end of "tens" and the tail reaches "low hundreds".
 * - EventBridge PutEvents, median 15 ms, p99 80 ms. AWS publishes no PutEvents latency. The Amazon
 *   Key team reports about 80 ms at p90 end to end (PutEvents, routing and delivery to the target)
 *   at 2,000 events a second, which bounds the API call from above: "Mastering millisecond latency
 *   and millions of events: The event-driven architecture behind the Amazon Key Suite", AWS
 *   Architecture Blog, 2026-02-04,
 *   https://aws.amazon.com/blogs/architecture/mastering-millisecond-latency-and-millions-of-events-the-event-driven-architecture-behind-the-amazon-key-suite
 * - Secrets Manager GetSecretValue, median 20 ms, p99 100 ms: no published figure was found; AWS
 *   says only that reading from a cache instead of "sending a request over the Internet to Secrets
 *   Manager can dramatically improve the performance of your applications"
 *   (https://docs.aws.amazon.com/secretsmanager/latest/userguide/use-client-side-caching.html),
 *   so it is modelled like the other regional JSON APIs here, in the tens of milliseconds.
 * - Scheduler, CloudFormation, CloudWatch, Lambda Invoke (its overhead, not the function's run):
 *   median 30 ms, p99 150 ms, the same "tens of milliseconds" reasoning; none is on a hot path.
 * - ElastiCache (Redis/Valkey round trip inside one AZ), median 0.35 ms, p99 1.3 ms. AWS: "scaling
 *   to millions of operations per second with microsecond read and write response time"
 *   (https://aws.amazon.com/blogs/database/amazon-elasticache-version-8-0-for-valkey-brings-faster-scaling-and-improved-memory-efficiency/);
 *   a same-AZ measurement of a cache.r7g.xlarge node gave "GET: 58,411 requests per second,
 *   p50=0.423ms, p99=1.287ms" and a PING average of 339 µs
 *   (https://cachee.ai/blog/posts/2026-03-29-redis-elasticache-is-slow-16us-cache-reads-vs-339us-benchmark-results,
 *   a cache vendor's own benchmark of its rival, so read as an order of magnitude).
 */

interface LogNormal {
  readonly medianMs: number;
  readonly p99Ms: number;
}

/** z of the 99th percentile of the standard normal distribution. */
const Z_99 = 2.3263478740408408;

export const AWS_LATENCY: Readonly<Record<string, LogNormal>> = {
  dynamodb: { medianMs: 4, p99Ms: 10 },
  sqs: { medianMs: 20, p99Ms: 150 },
  events: { medianMs: 15, p99Ms: 80 },
  secretsmanager: { medianMs: 20, p99Ms: 100 },
  scheduler: { medianMs: 30, p99Ms: 150 },
  cloudformation: { medianMs: 30, p99Ms: 150 },
  monitoring: { medianMs: 30, p99Ms: 150 },
  lambda: { medianMs: 30, p99Ms: 150 },
};

export const REDIS_LATENCY: LogNormal = { medianMs: 0.35, p99Ms: 1.3 };

/** Draws from a log-normal with the given median and p99 (Box–Muller over a seeded generator). */
function sampler(rng: RandomGenerator, { medianMs, p99Ms }: LogNormal): () => number {
  const mu = Math.log(medianMs);
  const sigma = Math.log(p99Ms / medianMs) / Z_99;
  return () => {
    // 1 - u keeps the logarithm's argument in (0, 1].
    const u1 = 1 - uniformFloat64(rng);
    const u2 = uniformFloat64(rng);
    const z = Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    return Math.exp(mu + sigma * z);
  };
}

/**
 * The per-call delay for the gateway's `latency` option: `(service) => ms` by SigV4 signing name,
 * 0 for a service it has no figure for. The same seed gives each service the same sequence of
 * delays: every service draws from its own generator, so how the calls to different services
 * interleave (which varies from run to run) does not change any one service's sequence.
 */
export function awsLatency(seed = 1): (service: string) => number {
  const samplers = new Map(
    Object.entries(AWS_LATENCY).map(([service, shape], i) => [
      service,
      sampler(xoroshiro128plus(seed ^ Math.imul(i + 1, 0x9e3779b1)), shape),
    ]),
  );
  return (service) => samplers.get(service)?.() ?? 0;
}

/** Round-trip delays of a Redis (ElastiCache) command, in milliseconds, seeded the same way. */
export function redisLatency(seed = 1): () => number {
  return sampler(xoroshiro128plus(seed), REDIS_LATENCY);
}

export interface AwsLatencyModel {
  /** For the gateway's `latency` option. */
  readonly aws: (service: string) => number;
  /**
   * For a TCP proxy in front of Redis that delays each chunk in each direction: half a sampled
   * round trip, so a command and its reply together take one.
   */
  readonly redis: () => number;
}

/** Both samplers of an `--latency aws` run, from one seed (Redis draws from a derived one). */
export function awsLatencyModel(seed = 1): AwsLatencyModel {
  const roundTrip = redisLatency(seed ^ 0x7ed15);
  return { aws: awsLatency(seed), redis: () => roundTrip() / 2 };
}
