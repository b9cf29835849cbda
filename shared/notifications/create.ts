import { EventBridgeClient } from "@aws-sdk/client-eventbridge";
import { ConfigError, type HourglassConfig } from "../config.ts";
import type { RedisIndex } from "../engine/redis-index.ts";
import type { Logger } from "../logger.ts";
import { EventBridgeSink } from "./eventbridge.ts";
import { TRANSITIONS, type Transition } from "./model.ts";
import { BufferedNotifier, NO_NOTIFIER, type NotificationSink, type Notifier } from "./notifier.ts";
import { indexTypeResolver, RedisStreamSink } from "./redis-stream.ts";

/** Notices per delivery: PutEvents takes 10 per request, and a few requests go out at once. */
const BATCH_SIZE = 200;

/**
 * The notifier a process publishes through: the tenants' Redis streams (locally, and wherever a
 * long-running process serves `GET /v1/events/stream`) and an EventBridge bus when one is named
 * with the transitions wanted on it (AWS; each entry is billed). Without either, or with
 * notifications off, transitions are not published at all.
 */
export function createNotifier(
  config: HourglassConfig,
  index: RedisIndex,
  logger: Logger,
  eventBridge: () => EventBridgeClient = () => new EventBridgeClient({}),
): Notifier {
  const settings = config.notifications;
  if (!settings.enabled) return NO_NOTIFIER;
  const unknown = settings.eventBusTransitions.filter(
    (name) => !(TRANSITIONS as readonly string[]).includes(name),
  );
  if (unknown.length > 0)
    throw new ConfigError(
      "HOURGLASS_EVENT_BUS_TRANSITIONS",
      `unknown transitions ${unknown.join(", ")}; known: ${TRANSITIONS.join(", ")}`,
    );
  const busTransitions = settings.eventBusTransitions as readonly Transition[];
  const sinks: NotificationSink[] = [];
  if (settings.stream)
    sinks.push(new RedisStreamSink(index.client, config.keyPrefix, settings.streamMaxLen, logger));
  if (settings.eventBusName && busTransitions.length > 0)
    sinks.push(
      new EventBridgeSink(
        busTransitions,
        eventBridge(),
        settings.eventBusName,
        settings.eventBusSource,
        logger,
      ),
    );
  if (sinks.length === 0) return NO_NOTIFIER;
  return new BufferedNotifier({
    sinks,
    logger,
    flushMs: settings.flushMs,
    batchSize: BATCH_SIZE,
    maxBuffered: settings.maxBuffered,
    resolveTypes: indexTypeResolver(index.client, config.keyPrefix, (member) => index.shardOf(member)),
  });
}
