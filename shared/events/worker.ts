import { setTimeout as sleep } from "node:timers/promises";
import DataLoader from "dataloader";
import pLimit from "p-limit";
import { type DecodedBody, decodeBody } from "../engine/body.ts";
import { ScriptCode } from "../engine/codes.ts";
import { parseMember } from "../engine/keys.ts";
import { REDIS_TIME, type StartResult, type TransitionResult } from "../engine/redis-index.ts";
import { describeError } from "../errors.ts";
import { DependencyUnavailableError, NonRetryableError } from "../handlers/errors.ts";
import { JournalConditionError } from "../journal/errors.ts";
import { type JournalItem, payloadJsonOf, TERMINAL_STATUSES } from "../journal/item.ts";
import type { Admission, AdmitRequest } from "../limits/flow-control.ts";
import type { DispatchMessage } from "../model/message.ts";
import { parseOccurrenceId } from "../model/occurrence-id.ts";
import { callbackEventFor, type FinalOutcome } from "../notifications/callbacks.ts";
import { notify, notifyDispatched } from "../notifications/publish.ts";
import { retryDelay } from "./backoff.ts";
import type { EngineDeps } from "./deps.ts";
import { HandlerTimeoutError, JournalItemMissingError, NotDueBeforeDeadlineError } from "./errors.ts";
import { directDispatchHorizon } from "./pause.ts";
import { sendOrRelease } from "./send.ts";
import { EventService } from "./service.ts";

/** `held`: flow control held the event back (parked in the index until its limits allow it). */
export type WorkOutcome = "succeeded" | "retrying" | "dead" | "dropped" | "held";

export interface WorkResult {
  readonly outcome: WorkOutcome;
  /** Why a message was dropped, or the error of a failed attempt. */
  readonly reason?: string;
  readonly attempt?: number;
  /** How long after runAt the handler started, in ms. Never negative. */
  readonly lateMs?: number;
  /**
   * A `retrying` attempt the platform gave back: a dependency was unavailable (the webhook's
   * request slots, its signing state), so the attempt does not count against maxAttempts. Counted
   * apart, so a receiver that keeps its events waiting shows as such rather than as failures.
   */
  readonly givenBack?: boolean;
}

export interface WorkerHooks {
  /** Called as a handler starts; the benchmark measures lateness here. */
  onStart?(message: DispatchMessage, startedAt: number): void;
}

/**
 * Where a finished handler's outcome may wait before it is written (the local runtime's
 * `TrailingOutcomes`): `hold` resolves when the write may go, never later than `maxWaitMs` from now,
 * with the callback to call once the outcome is recorded (or its recording failed).
 */
export interface OutcomeGate {
  hold(maxWaitMs: number): Promise<() => void>;
}

/** Leave this much of the Lambda's time for the journal and index writes after a handler. */
const DEADLINE_RESERVE_MS = 2_000;

/**
 * A held outcome is written at least this long before its run lease ends (or half the lease's
 * margin, if that is longer), so the write lands before the index could send a copy.
 */
const OUTCOME_WRITE_RESERVE_MS = 10_000;

/** Start batches (up to 1,000 events each) a worker has in Redis at once. */
const STARTS_IN_FLIGHT = 2;

/**
 * Runs one dispatched event: checks that the message is still the current one, waits out any
 * sub-second remainder (never early), runs the handler, then records the outcome in the journal
 * and the index. Infrastructure failures are thrown, so the queue redelivers the message; handler
 * failures are retried by Hourglass itself, with backoff.
 */
export class Worker {
  /**
   * Starts and acks requested in the same turn of the event loop go to Redis together, one script
   * call per shard. Scheduling on setImmediate gathers every timer that fired in this turn, so a
   * burst of events due at the same moment costs a few round trips, not one each.
   */
  private readonly starts: DataLoader<DispatchMessage, StartResult>;
  private readonly acks: DataLoader<DispatchMessage, TransitionResult>;
  private readonly admissions: DataLoader<AdmitRequest, Admission> | undefined;
  private readonly frees: DataLoader<AdmitRequest, void> | undefined;
  private outcomeGate: OutcomeGate | undefined;
  private handlersRunning = 0;
  private waitingForDue = 0;
  private eventsInProcess = 0;

  constructor(
    private readonly deps: EngineDeps,
    private readonly hooks: WorkerHooks = {},
  ) {
    const batching = {
      cache: false,
      maxBatchSize: 1_000,
      batchScheduleFn: (run: () => void) => setImmediate(run),
    };
    // A few start batches in flight, not all: when thousands fall due at once, the admissions
    // and acks of the first batches reach Redis between the later starts instead of queueing
    // behind all of them, so handlers begin while the rest start (Redis and this process work
    // side by side instead of in turns).
    const startsInFlight = pLimit(STARTS_IN_FLIGHT);
    this.starts = new DataLoader(
      (messages) =>
        startsInFlight(() =>
          deps.index.startMany(
            messages,
            REDIS_TIME,
            deps.config.handlerTimeoutMs + deps.config.runLeaseMarginMs,
          ),
        ),
      batching,
    );
    this.acks = new DataLoader((messages) => deps.index.ackMany(messages), batching);
    const flow = deps.flow;
    if (flow?.admits) {
      this.admissions = new DataLoader((requests) => flow.admit(requests), batching);
      this.frees = new DataLoader(async (requests) => {
        await flow.free(requests);
        return requests.map(() => undefined);
      }, batching);
    }
  }

  /** Handlers running now (not messages waiting for their due time, nor outcomes being recorded). */
  get running(): number {
    return this.handlersRunning;
  }

  /** Messages waiting for their due time (delivered ahead, or the sub-second remainder). */
  get waiting(): number {
    return this.waitingForDue;
  }

  /** Called each time a message starts to wait for its due time (the local consumer's slots). */
  onWaiting: (() => void) | undefined;

  /**
   * Awaited when a message's wait for its due time ends, before it starts: the local consumer's
   * slot of `maxInFlight`, which a waiting message does not hold.
   */
  untilSlot: (() => Promise<void>) | undefined;

  /**
   * Lets outcomes wait at `gate` after their handlers return (the local runtime's consumer, while
   * its queue has a backlog). Without one, every outcome is written as its handler returns.
   */
  trailOutcomes(gate: OutcomeGate): void {
    this.outcomeGate = gate;
  }

  /** Events between the call to `process` and its return (waiting, running, or being recorded). */
  get processing(): number {
    return this.eventsInProcess;
  }

  /**
   * Called as each `process` call returns: the local consumer frees that event's slot then, not
   * when the last event of its message is done (a shared message would otherwise hold slots its
   * finished events no longer use, and events asking for a slot could wait on each other forever).
   */
  onProcessed: (() => void) | undefined;

  async process(message: DispatchMessage, deadline = Number.POSITIVE_INFINITY): Promise<WorkResult> {
    // Counted in the same turn as the call: the consumer sees the slot taken before it receives again.
    this.eventsInProcess++;
    try {
      return await this.processOne(message, deadline);
    } finally {
      this.eventsInProcess--;
      this.onProcessed?.();
    }
  }

  private async processOne(message: DispatchMessage, deadline: number): Promise<WorkResult> {
    const { logger } = this.deps;
    // When the run lease that a successful start takes begins, at the earliest: the time the
    // start is planned for (the wait before it only ever overshoots).
    let askedAt = Math.max(this.deps.clock(), message.runAt);
    // A message that cannot come due before the Lambda's deadline goes back to the queue now,
    // not after a wait the timeout would cut short.
    if (message.runAt > deadline - DEADLINE_RESERVE_MS) throw new NotDueBeforeDeadlineError(message);
    let started = await this.startWhenDue(message, message.runAt - this.deps.clock());
    // EARLY is judged by Redis's clock; timers fire early under load and clocks drift, so wait
    // out what Redis says is left, as often as it takes. Only the Lambda's deadline ends the
    // wait, and then the message goes back to the queue (thrown) rather than being dropped.
    while (started.code === ScriptCode.EARLY) {
      const wait = Math.max(1, started.runAt - started.now);
      if (this.deps.clock() + wait > deadline - DEADLINE_RESERVE_MS)
        throw new NotDueBeforeDeadlineError(message);
      askedAt = this.deps.clock() + wait;
      started = await this.startWhenDue(message, wait);
    }
    if (started.code !== ScriptCode.OK) {
      const reason = ScriptCode[started.code].toLowerCase();
      logger.debug("message dropped", { event: message.member, gen: message.gen, reason });
      return { outcome: "dropped", reason };
    }

    const body = decodeBody(started.body);
    const { tenant, id } = parseMember(message.member);
    // Flow control after start, so never-early and cancel are judged first and no token is
    // spent on a message that would not run. Held back: parked in the index with the attempt
    // given back, released by the dispatcher in due order when its limits allow.
    const slot = { tenant, type: body.type, member: message.member };
    const admission = await this.admissions?.load(slot);
    if (admission && !admission.admitted) {
      const [parked] = await this.deps.index.hold([message], admission.reason, "running");
      if (parked === ScriptCode.OK)
        notify(this.deps, "held", {
          tenant,
          id,
          type: body.type,
          attempt: message.attempt,
          heldBy: admission.reason,
          status: message.attempt > 0 ? "retrying" : "scheduled",
        });
      logger.debug("event held back", { event: message.member, heldBy: admission.reason });
      return { outcome: "held", reason: admission.reason };
    }
    // Every outcome gives the slot back (a held one as soon as its handler returns: the slot
    // counts handlers running); a crash gives it back when its deadline passes.
    let freed: Promise<void> | undefined;
    const free = () => (freed ??= this.frees?.load(slot) ?? Promise.resolve());
    const { config } = this.deps;
    const leaseEndsAt = askedAt + config.handlerTimeoutMs + config.runLeaseMarginMs;
    const holdUntil = leaseEndsAt - Math.max(config.runLeaseMarginMs / 2, OUTCOME_WRITE_RESERVE_MS);
    try {
      return await this.run(message, started, body, tenant, id, deadline, async () => {
        if (!this.outcomeGate) return undefined;
        // Not thrown here: a failed free must not cost the outcome (the handler would run again).
        // The `finally` below awaits the same call and reports it once the outcome is recorded.
        await free().catch(() => {});
        return this.outcomeGate.hold(holdUntil - this.deps.clock());
      });
    } finally {
      await free();
    }
  }

  private async run(
    message: DispatchMessage,
    started: { attempt: number },
    body: DecodedBody,
    tenant: string,
    id: string,
    deadline: number,
    /**
     * Between the handler and its outcome: where a gate may hold the outcome back. Resolves with
     * what to call once the outcome is recorded.
     */
    beforeOutcome: () => Promise<(() => void) | undefined>,
  ): Promise<WorkResult> {
    const { config } = this.deps;
    const attempt = started.attempt;
    const maxAttempts = body.maxAttempts ?? config.retry.maxAttempts;
    const event = { message, tenant, id, attempt, lateMs: 0 };

    let failure: unknown;
    if (attempt > maxAttempts) {
      // Workers died mid-run on earlier attempts, each counted when it started.
      failure = new NonRetryableError(`attempts exhausted (${attempt - 1} of ${maxAttempts} already made)`);
    } else {
      failure = await this.runHandler(body, event, deadline);
    }
    // The outcome's time is the handler's end, not the end of a wait at the gate: a retry's backoff
    // and a finish time do not grow with another tenant's backlog.
    const endedAt = this.deps.clock();
    const recorded = await beforeOutcome();
    const done = event;
    let result: WorkResult;
    try {
      result = await (failure === undefined
        ? this.succeed(done, body, endedAt)
        : this.fail(done, body, maxAttempts, failure, endedAt));
    } finally {
      recorded?.();
    }
    // succeed and fail never hold an event back; only `process` does, before the handler.
    this.deps.metrics?.finished(
      tenant,
      body.type,
      result.givenBack ? "givenBack" : (result.outcome as Exclude<WorkOutcome, "held">),
    );
    return result;
  }

  private async startWhenDue(message: DispatchMessage, wait: number): Promise<StartResult> {
    if (wait > 0) {
      this.waitingForDue++;
      this.onWaiting?.();
      try {
        await sleep(wait);
      } finally {
        this.waitingForDue--;
      }
      await this.untilSlot?.();
    }
    return this.starts.load(message);
  }

  /** Returns the handler's error, or undefined on success. */
  private async runHandler(body: DecodedBody, event: Done, deadline: number): Promise<unknown> {
    const { registry, config, clock, logger } = this.deps;
    const handler = registry.get(body.type);
    // Retried rather than buried: a deployment that registers the type may be on its way.
    if (!handler) return new Error(`no handler is registered for type "${body.type}"`);
    const payload = handler.schema.safeParse(await this.payloadOf(body, event));
    if (!payload.success)
      return new NonRetryableError(`payload rejected by the ${body.type} schema: ${payload.error.message}`);
    // The configured timeout is an upper bound: the run lease taken in `start` covers only that much.
    const timeoutMs = Math.max(
      1,
      Math.min(
        handler.options.timeoutMs ?? config.handlerTimeoutMs,
        config.handlerTimeoutMs,
        deadline - clock() - DEADLINE_RESERVE_MS,
      ),
    );
    const startedAt = clock();
    event.lateMs = startedAt - event.message.runAt;
    this.hooks.onStart?.(event.message, startedAt);
    this.deps.metrics?.started(event.tenant, body.type, event.lateMs);
    notify(this.deps, "started", { ...event, type: body.type, runAt: event.message.runAt });
    logger.info("event running", {
      id: event.id,
      tenant: event.tenant,
      type: body.type,
      attempt: event.attempt,
      lateMs: event.lateMs,
    });
    const controller = new AbortController();
    // Real time, as the timer runs, whatever clock the worker judges due times by.
    const timerStartedAt = performance.now();
    const timer = setTimeout(() => controller.abort(new HandlerTimeoutError(timeoutMs)), timeoutMs);
    const aborted = new Promise<never>((_, reject) =>
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
    );
    this.handlersRunning++;
    try {
      await Promise.race([
        handler.run(payload.data, {
          id: event.id,
          tenant: event.tenant,
          attempt: event.attempt,
          runAt: new Date(event.message.runAt),
          logger,
          signal: controller.signal,
          remainingMs: () => timeoutMs - (performance.now() - timerStartedAt),
          ...occurrenceContext(event.id),
        }),
        aborted,
      ]);
      return undefined;
    } catch (error) {
      return error ?? new Error("handler threw a falsy value");
    } finally {
      this.handlersRunning--;
      clearTimeout(timer);
    }
  }

  /**
   * The payload: from the message when the sender put it there, inline in the index without a
   * journal, otherwise read from the journal (batched with the other reads of this tick).
   */
  private async payloadOf(body: DecodedBody, event: Done): Promise<unknown> {
    if (event.message.payload !== undefined) return JSON.parse(event.message.payload) as unknown;
    if (!body.payloadInJournal) return body.payload;
    const item = await this.deps.journal?.load(event.tenant, event.id);
    if (!item) throw new JournalItemMissingError(event.tenant, event.id);
    return JSON.parse(payloadJsonOf(item)) as unknown;
  }

  private async succeed(done: Done, body: DecodedBody, finishedAt: number): Promise<WorkResult> {
    const { journal, logger } = this.deps;
    if (
      journal &&
      !(await this.recorded(
        () => journal.markSucceeded(done.tenant, done.id, done.attempt, finishedAt),
        done,
      ))
    ) {
      return alreadyFinished(done);
    }
    if (journal) notify(this.deps, "succeeded", { ...done, type: body.type });
    const acked = await this.acks.load(done.message);
    if (!journal && acked.code === ScriptCode.OK)
      notify(this.deps, "succeeded", { ...done, type: body.type });
    if (journal || acked.code === ScriptCode.OK)
      await this.callBack(body, "succeeded", { ...done, finishedAt });
    if (acked.code === ScriptCode.STALE && journal) {
      // The index moved on while the handler ran (its lease ran out and a copy was sent again),
      // but the journal now says succeeded, and the journal is the judge: drop the entry, so
      // the copy finds nothing when it arrives instead of running the handler a second time.
      logger.warn("ack found the event re-dispatched; removing it, the journal says succeeded", {
        id: done.id,
        status: acked.status,
      });
      await this.deps.index.forget(done.message.member, "succeeded");
    } else if (acked.code !== ScriptCode.OK) {
      logger.warn("ack found the event changed", { id: done.id, code: acked.code });
    }
    logger.info("event succeeded", { id: done.id, tenant: done.tenant, attempt: done.attempt });
    return { outcome: "succeeded", attempt: done.attempt, lateMs: done.lateMs };
  }

  private async fail(
    done: Done,
    body: DecodedBody,
    maxAttempts: number,
    error: unknown,
    endedAt: number,
  ): Promise<WorkResult> {
    const { journal, index, clock, config, logger } = this.deps;
    const reason = describeError(error);
    const now = clock();
    // The platform failed, not the handler: retried with backoff, and the attempt is given back.
    const refund = error instanceof DependencyUnavailableError;
    if (refund || (!(error instanceof NonRetryableError) && done.attempt < maxAttempts)) {
      const nextRunAt = endedAt + retryDelay(error, done.attempt, body.backoff, config.retry);
      const attempts = refund ? done.attempt - 1 : done.attempt;
      if (
        journal &&
        !(await this.recorded(
          () => journal.markRetrying(done.tenant, done.id, attempts, reason, nextRunAt, now),
          done,
        ))
      ) {
        return alreadyFinished(done);
      }
      const failed = { ...done, type: body.type, error: reason, runAt: nextRunAt };
      if (journal) notify(this.deps, "retrying", failed);
      const retried = await index.retry(
        done.message,
        nextRunAt,
        {
          now,
          // While dispatch is paused the retry waits in the index for the resume.
          dispatchUntil: await directDispatchHorizon(
            index.client,
            config.keyPrefix,
            now,
            config.lookAheadMs,
            [nextRunAt],
          ),
          leaseMs: config.dispatchLeaseMs,
        },
        refund,
      );
      if (!journal && (retried.code === ScriptCode.OK || retried.code === ScriptCode.DISPATCHED))
        notify(this.deps, "retrying", failed);
      if (retried.code === ScriptCode.DISPATCHED) {
        // Due within the look-ahead: straight to the queue, not at the next dispatcher tick
        // (a minute on AWS, for a backoff of a second).
        const { payload } = done.message;
        notifyDispatched(
          this.deps,
          [{ ...done.message, gen: retried.gen, runAt: nextRunAt, attempt: attempts }],
          body.type,
        );
        await sendOrRelease(
          this.deps,
          [
            {
              member: done.message.member,
              shard: done.message.shard,
              gen: retried.gen,
              runAt: nextRunAt,
              attempt: attempts,
              ...(payload !== undefined && { payload }),
            },
          ],
          now,
        );
      }
      logger.warn(refund ? "event attempt given back; retrying" : "event failed; retrying", {
        id: done.id,
        attempt: done.attempt,
        retryInMs: nextRunAt - now,
        error: reason,
      });
      return {
        outcome: "retrying",
        reason,
        attempt: done.attempt,
        lateMs: done.lateMs,
        ...(refund && { givenBack: true }),
      };
    }
    // The death as the journal stamped it, after every earlier write of the event whatever this
    // worker's clock says: the index keeps it at that stamp, so a replay compares its own stamp
    // with the journal's order, not with this clock (revive.lua).
    let diedAt = endedAt;
    if (journal) {
      const recorded = await this.recorded(
        () => journal.markDead(done.tenant, done.id, done.attempt, reason, endedAt),
        done,
      );
      if (!recorded) return alreadyFinished(done);
      diedAt = recorded.finishedAt ?? endedAt;
      notify(this.deps, "dead", { ...done, type: body.type, error: reason });
    }
    const buried = await index.bury(done.message, diedAt);
    if (!journal && buried.code === ScriptCode.OK)
      notify(this.deps, "dead", { ...done, type: body.type, error: reason });
    if (journal || buried.code === ScriptCode.OK)
      await this.callBack(body, "dead", { ...done, error: reason, finishedAt: diedAt });
    logger.error("event dead-lettered", { id: done.id, attempt: done.attempt, error: reason });
    return { outcome: "dead", reason, attempt: done.attempt, lateMs: done.lateMs };
  }

  /**
   * Schedules the event's callback for its outcome, if it has one, as a `webhook` event of the
   * same tenant, after the outcome is recorded: the callback's delivery (signed, retried, guarded)
   * is that event's business and never touches this event's outcome. A failure to schedule it is
   * logged, not thrown: the outcome stands either way.
   */
  private async callBack(
    body: DecodedBody,
    outcome: FinalOutcome,
    finished: Done & { error?: string; finishedAt: number },
  ): Promise<void> {
    const input = callbackEventFor(body.callbacks, outcome, { ...finished, type: body.type });
    if (!input) return;
    try {
      this.events ??= new EventService(this.deps);
      await this.events.schedule(finished.tenant, input, { internal: true });
    } catch (error) {
      this.deps.logger.error("callback not scheduled", {
        id: finished.id,
        tenant: finished.tenant,
        outcome,
        error: describeError(error),
      });
    }
  }

  private events: EventService | undefined;

  /**
   * Runs a journal transition; returns the item as written. Undefined when the journal says the
   * event already finished (a duplicate run after a lost ack): the index entry is then dropped to
   * match the journal.
   */
  private async recorded(write: () => Promise<JournalItem>, done: Done): Promise<JournalItem | undefined> {
    try {
      return await write();
    } catch (error) {
      if (!(error instanceof JournalConditionError)) throw error;
      const status = error.existing?.status;
      if (status && TERMINAL_STATUSES.includes(status)) {
        await this.deps.index.forget(done.message.member, status as "succeeded" | "cancelled" | "dead");
        return undefined;
      }
      throw error;
    }
  }
}

interface Done {
  readonly message: DispatchMessage;
  readonly tenant: string;
  readonly id: string;
  readonly attempt: number;
  /** How long after runAt the handler started; set as it starts. */
  lateMs: number;
}

function occurrenceContext(id: string) {
  const ref = parseOccurrenceId(id);
  return ref && { scheduleId: ref.scheduleId, occurrenceAt: new Date(ref.occurrenceAt) };
}

/** The journal says the event already finished (a copy got there first): this run changes nothing. */
function alreadyFinished(done: Done): WorkResult {
  return { outcome: "dropped", reason: "already finished", attempt: done.attempt, lateMs: done.lateMs };
}
