import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { LambdaClient } from "@aws-sdk/client-lambda";
import { GetQueueUrlCommand, type SQSClient } from "@aws-sdk/client-sqs";
import { createDynamoClient, createSqsClient } from "./aws.ts";
import { type HourglassConfig, loadConfig } from "./config.ts";
import { createRedis } from "./engine/redis.ts";
import { RedisIndex } from "./engine/redis-index.ts";
import type { RedisClient } from "./engine/scripts.ts";
import type { EngineDeps } from "./events/deps.ts";
import { Dispatcher, SYSTEM_TENANT } from "./events/dispatcher.ts";
import { EventService } from "./events/service.ts";
import { Worker, type WorkerHooks } from "./events/worker.ts";
import { lambdaTarget } from "./handlers/lambda-target.ts";
import { type HandlerDefinition, HandlerRegistry } from "./handlers/registry.ts";
import { DynamoSigningStateStore, WebhookSigning } from "./handlers/signing.ts";
import { webhookHandler } from "./handlers/webhook.ts";
import { WebhookSlots } from "./handlers/webhook-slots.ts";
import { EventJournal } from "./journal/journal.ts";
import { LeaseService } from "./leases/lease-service.ts";
import { HoldAdmission } from "./ledger/admission.ts";
import { expiryScheduler, reservationExpiryHandler } from "./ledger/expiry.ts";
import { ledgerFacts } from "./ledger/ledger-facts.ts";
import { StockLedger } from "./ledger/ledger-service.ts";
import { FlowControl } from "./limits/flow-control.ts";
import { LimitsStore } from "./limits/store.ts";
import { createLogger, type Logger } from "./logger.ts";
import { MetricsRecorder } from "./metrics-store/recorder.ts";
import { createNotifier } from "./notifications/create.ts";
import type { Notifier } from "./notifications/notifier.ts";
import { Materializer } from "./schedules/materializer.ts";
import { ScheduleService } from "./schedules/service.ts";
import { ScheduleStore } from "./schedules/store.ts";
import { loadSecrets, withAuthToken } from "./secrets.ts";
import { SqsTransport } from "./transport/sqs.ts";
import type { Transport } from "./transport/transport.ts";

export interface HourglassOptions {
  /** @default loadConfig() from the environment */
  readonly config?: HourglassConfig;
  /** The user's handlers, next to the built-in ones. */
  readonly handlers?: readonly HandlerDefinition[];
  /** @default SQS (the work queue). The in-process transport is for the benchmark. */
  readonly transport?: (deps: { sqs: SQSClient; queueUrl: string | undefined }) => Transport;
  readonly logger?: Logger;
  readonly clock?: () => number;
  readonly workerHooks?: WorkerHooks;
  /** @default createNotifier(config, …): the tenants' Redis streams and the EventBridge bus, if named. */
  readonly notifier?: Notifier;
  /** Name under which logs are emitted. @default "hourglass" */
  readonly service?: string;
}

/** Everything a process needs, built once (at module scope in Lambda) and shared. */
export interface Hourglass {
  readonly config: HourglassConfig;
  readonly logger: Logger;
  readonly redis: RedisClient;
  readonly dynamo: DynamoDBClient;
  /** A second client for the worker's payload reads, so they never queue behind writes. */
  readonly dynamoReads: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly queueUrl: string | undefined;
  readonly index: RedisIndex;
  readonly journal: EventJournal | undefined;
  /** Leases and the stock ledger need DynamoDB; the engine-only mode has neither. */
  readonly leases: LeaseService | undefined;
  readonly ledger: StockLedger | undefined;
  /** Recurring schedules live in DynamoDB: absent in the engine-only mode. */
  readonly schedules: ScheduleService | undefined;
  readonly registry: HandlerRegistry;
  /** Each tenant's webhook signing secrets, derived from the master secret. */
  readonly signing: WebhookSigning;
  readonly events: EventService;
  readonly dispatcher: Dispatcher;
  readonly worker: Worker;
  /** Per-minute throughput and lateness in Redis, read by `GET /v1/metrics`. */
  readonly metrics: MetricsRecorder;
  /** Publishes every transition (Redis streams, EventBridge); Lambda flushes it before freezing. */
  readonly notifier: Notifier;
  /** Flow control: type limits (GET/PUT /v1/types/{type}/limits) and the per-tenant caps. */
  readonly flow: FlowControl;
  close(): Promise<void>;
}

export async function createHourglass(options: HourglassOptions = {}): Promise<Hourglass> {
  const loaded = options.config ?? loadConfig();
  const secrets = await loadSecrets(loaded.secretArns);
  const config: HourglassConfig = {
    ...loaded,
    redis: { ...loaded.redis, url: withAuthToken(loaded.redis.url, secrets.redisAuthToken) },
    webhook: { ...loaded.webhook, secret: loaded.webhook.secret ?? secrets.webhookSecret },
  };
  const inLambda = Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);
  const logger = options.logger ?? createLogger(options.service ?? "hourglass", config.logLevel, inLambda);
  const redis = createRedis(config.redis.url, config.redis.cluster);
  const dynamo = createDynamoClient();
  const sqs = createSqsClient({ verifyMd5: config.mode === "aws" });
  const needsQueue = !options.transport;
  const queueUrl =
    config.queue.url ??
    (needsQueue
      ? (await sqs.send(new GetQueueUrlCommand({ QueueName: config.queue.name }))).QueueUrl
      : undefined);
  const transport = options.transport
    ? options.transport({ sqs, queueUrl })
    : new SqsTransport(sqs, queueUrl!, undefined, config.deliverAheadMs, config.eventsPerMessage);
  const signing = new WebhookSigning(
    config.webhook.secret,
    config.journal ? new DynamoSigningStateStore(dynamo, config.tables.leases) : undefined,
    options.clock ?? Date.now,
  );
  const registry = new HandlerRegistry([
    webhookHandler({
      signing,
      policy: {
        allowPrivate: config.webhook.allowPrivate,
        allowLoopback: config.webhook.allowLoopback,
        refusedPorts: config.webhook.refusedPorts,
      },
      timeoutMs: config.webhook.timeoutMs,
      slots: new WebhookSlots(config.webhook.requestsPerOrigin),
    }),
    ...lambdaTargets(config),
    ...(options.handlers ?? []),
  ]);
  const dynamoReads = createDynamoClient();
  const journal = config.journal
    ? new EventJournal(dynamo, config.tables.events, config.retentionSeconds, dynamoReads)
    : undefined;
  const index = new RedisIndex(redis, config.keyPrefix, config.shards, config.shardInFlight);
  const metrics = new MetricsRecorder(redis, config.keyPrefix, logger, options.clock ?? Date.now);
  const notifier = options.notifier ?? createNotifier(config, index, logger);
  const flow = new FlowControl(
    redis,
    config,
    config.journal
      ? new LimitsStore(dynamo, config.tables.leases, config.tenantLimits.limitedTypes)
      : undefined,
    options.clock ?? Date.now,
  );
  const deps: EngineDeps = {
    config,
    index,
    journal,
    transport,
    registry,
    logger,
    clock: options.clock ?? Date.now,
    metrics,
    notifier,
    flow,
  };
  const leases = config.journal ? new LeaseService(dynamo, config.tables.leases, deps.clock) : undefined;
  const events = new EventService(deps);
  const ledger = config.journal
    ? new StockLedger(dynamo, config.tables.ledger, expiryScheduler(events, deps.clock), {
        snapshotEvery: config.ledgerSnapshotEvery,
        clock: deps.clock,
        logger,
        admission: new HoldAdmission(redis, ledgerFacts(dynamo, config.tables.ledger), {
          prefix: config.keyPrefix,
          clock: deps.clock,
          logger,
        }),
      })
    : undefined;
  // Registered once the ledger exists: the ledger needs the event service, which needs the registry.
  if (ledger) registry.register(reservationExpiryHandler(ledger));
  const scheduleDeps = config.journal
    ? { config, store: new ScheduleStore(dynamo, config.tables.schedules), events, logger, clock: deps.clock }
    : undefined;
  const schedules = scheduleDeps && new ScheduleService({ ...scheduleDeps, registry });
  const materializer =
    scheduleDeps && new Materializer({ ...scheduleDeps, leases, systemTenant: SYSTEM_TENANT });
  // Half of each tick's budget at most for schedules; the rest stays for dispatching.
  const dispatcher = new Dispatcher(
    deps,
    leases,
    materializer && (async (budgetMs) => (await materializer.run(Math.floor(budgetMs / 2))).materialized),
  );
  return {
    config,
    logger,
    redis,
    dynamo,
    dynamoReads,
    sqs,
    queueUrl,
    index,
    journal,
    registry,
    signing,
    leases,
    ledger,
    schedules,
    events,
    dispatcher,
    worker: new Worker(deps, options.workerHooks),
    metrics,
    notifier,
    flow,
    async close() {
      // A recovery page still running past its tick's deadline finishes before the clients go.
      await dispatcher.settled();
      await metrics.flush();
      await notifier.close();
      redis.disconnect();
      dynamo.destroy();
      dynamoReads.destroy();
      sqs.destroy();
    },
  };
}

/** Handlers for the event types configured to run in the user's own Lambda functions. */
function lambdaTargets(config: HourglassConfig) {
  const entries = Object.entries(config.lambdaTargets);
  if (entries.length === 0) return [];
  const client = new LambdaClient({});
  return entries.map(([type, fn]) => lambdaTarget(type, fn, client));
}
