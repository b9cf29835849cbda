import type { HourglassConfig } from "../config.ts";
import type { RedisIndex } from "../engine/redis-index.ts";
import type { HandlerRegistry } from "../handlers/registry.ts";
import type { EventJournal } from "../journal/journal.ts";
import type { FlowControl } from "../limits/flow-control.ts";
import type { Logger } from "../logger.ts";
import type { EngineMetrics } from "../metrics-store/recorder.ts";
import type { Notifier } from "../notifications/notifier.ts";
import type { Transport } from "../transport/transport.ts";

/** What the event service, dispatcher and worker are built from. */
export interface EngineDeps {
  readonly config: HourglassConfig;
  readonly index: RedisIndex;
  /** Absent only in the engine-only benchmark mode (HOURGLASS_JOURNAL=false). */
  readonly journal: EventJournal | undefined;
  readonly transport: Transport;
  readonly registry: HandlerRegistry;
  readonly logger: Logger;
  /** Epoch ms. Injected so tests can steer time. */
  readonly clock: () => number;
  /** Per-minute throughput and lateness for the dashboard and `GET /v1/metrics`; optional in tests. */
  readonly metrics?: EngineMetrics;
  /** Every transition is handed to it (shared/notifications); absent means none are published. */
  readonly notifier?: Notifier;
  /** Flow control (type limits, tenant caps); absent in tests that build an engine without it. */
  readonly flow?: FlowControl;
}
