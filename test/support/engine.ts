import type { EngineDeps } from "../../shared/events/deps.ts";
import { Dispatcher } from "../../shared/events/dispatcher.ts";
import { EventService } from "../../shared/events/service.ts";
import { Worker } from "../../shared/events/worker.ts";
import type { StockLedger } from "../../shared/ledger/ledger-service.ts";
import { silentLogger } from "../../shared/logger.ts";
import type { DispatchMessage } from "../../shared/model/message.ts";
import type { Transport } from "../../shared/transport/transport.ts";
import type { TestHourglass } from "./harness.ts";

/**
 * Building blocks for tests that play one process of the engine by hand: a crash at a chosen
 * step, a transport that keeps its messages, and the engine's parts built from swapped deps.
 */
export class Crash extends Error {
  constructor() {
    super("simulated crash");
  }
}

/** Wraps one method so that the process "dies" before or after it does its work. */
export function crashOn<T extends object>(target: T, method: keyof T & string, when: "before" | "after"): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== "function") return value;
      if (property !== method) return value.bind(object);
      return async (...args: unknown[]) => {
        if (when === "before") throw new Crash();
        await value.apply(object, args);
        throw new Crash();
      };
    },
  });
}

/** Wraps one method with `around`, which gets the original (bound) and the call's arguments. */
export function intercept<T extends object>(
  target: T,
  method: keyof T & string,
  around: (original: (...args: unknown[]) => Promise<unknown>, ...args: unknown[]) => Promise<unknown>,
): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== "function") return value;
      if (property !== method) return value.bind(object);
      return (...args: unknown[]) => around(value.bind(object), ...args);
    },
  });
}

/** A transport that keeps messages instead of sending them, as if the process died holding them. */
export function captured() {
  const messages: DispatchMessage[] = [];
  const transport: Transport = {
    async send(batch) {
      messages.push(...batch);
      return { sent: batch.length, failed: [] };
    },
  };
  return { messages, transport };
}

/** A transport whose every send fails, as SQS does during an outage. */
export function failing(): Transport {
  return {
    async send(batch) {
      return { sent: 0, failed: batch.map((message) => ({ message, reason: "queue unavailable" })) };
    },
  };
}

/** The parts a process is built from; by default they are the test Hourglass's real ones. */
export function engine(hg: TestHourglass, overrides: Partial<EngineDeps> = {}) {
  const deps: EngineDeps = {
    config: hg.config,
    index: hg.index,
    journal: hg.journal,
    registry: hg.registry,
    logger: silentLogger,
    clock: Date.now,
    transport: captured().transport,
    ...overrides,
  };
  return {
    deps,
    service: new EventService(deps),
    dispatcher: new Dispatcher(deps, undefined),
    worker: new Worker(deps),
  };
}

let tenants = 0;

/** A tenant no other test uses, so counts and lists never depend on test order. */
export function freshTenant(label = "t"): string {
  tenants++;
  return `${label}${process.pid}x${tenants}`;
}

/** The ledger's own write of a hold, as `aroundHoldWrite` hands it to the test. */
export type HoldWrite = (
  tenant: string,
  reservation: { expiryEventId: string },
  ...rest: unknown[]
) => Promise<unknown>;

/**
 * Runs `around` in place of the ledger's hold write (after the hold's expiry event is scheduled,
 * before the hold is written), so a test can land a fault in that window. Returns the undo.
 */
export function aroundHoldWrite(
  ledger: StockLedger,
  around: (write: HoldWrite, ...args: Parameters<HoldWrite>) => Promise<unknown>,
): () => void {
  const reservations = (ledger as unknown as { reservations: Record<string, unknown> }).reservations;
  const write = (reservations.writeHold as HoldWrite).bind(reservations);
  reservations.writeHold = (...args: Parameters<HoldWrite>) => around(write, ...args);
  return () => {
    reservations.writeHold = write;
  };
}
