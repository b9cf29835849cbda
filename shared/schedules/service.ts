import type { HourglassConfig } from "../config.ts";
import type { EventService } from "../events/service.ts";
import { fieldIssues, fingerprintOf } from "../events/validate.ts";
import type { HandlerRegistry } from "../handlers/registry.ts";
import { idFactory } from "../ids.ts";
import type { Logger } from "../logger.ts";
import { newIncarnation } from "../model/occurrence-id.ts";
import {
  ScheduleChangedError,
  ScheduleConflictError,
  ScheduleNotFoundError,
  ScheduleValidationError,
} from "./errors.ts";
import { evaluator, localIso } from "./evaluate.ts";
import {
  type ScheduleItem,
  type ScheduleSpec,
  type ScheduleState,
  type ScheduleView,
  viewOfSchedule,
} from "./model.ts";
import { cancelOccurrences } from "./occurrences.ts";
import { patchScheduleInput } from "./schema.ts";
import { type ScheduleListOptions, ScheduleStore } from "./store.ts";
import { checkSpec, parseCreate, type ScheduleRules } from "./validate.ts";

export interface ScheduleDeps {
  readonly config: HourglassConfig;
  readonly store: ScheduleStore;
  readonly events: EventService;
  readonly registry: HandlerRegistry;
  readonly logger: Logger;
  readonly clock: () => number;
}

export interface ScheduleStats {
  readonly schedules: Record<ScheduleState, number>;
  readonly occurrences: number;
  readonly skipped: number;
  readonly missed: number;
}

export interface Occurrence {
  /** Epoch ms. */
  readonly at: number;
  /** The same instant as a local time in the schedule's zone, with its offset. */
  readonly local: string;
}

/**
 * How often the dispatcher materializes, at most: each pass queries every due shard, so a fast
 * tick (tests run 100 ms) does not multiply the DynamoDB reads.
 */
export function materializeEveryMs(config: HourglassConfig): number {
  return Math.max(config.tickMs, 1_000);
}

/** How far ahead of now the dispatcher materializes occurrences: the look-ahead, one pass, and a second. */
export function materializeHorizonMs(config: HourglassConfig): number {
  return config.lookAheadMs + materializeEveryMs(config) + 1_000;
}

/**
 * Recurring schedules: create (idempotent by id), read, list, edit, pause, resume, delete, and the
 * next occurrences. The schedules table is the source of truth; the dispatcher materializes
 * occurrences from it (see `materializer.ts`). Pausing, editing and deleting cancel the
 * occurrences already materialized that have not started.
 */
export class ScheduleService {
  private readonly newId = idFactory();

  constructor(private readonly deps: ScheduleDeps) {}

  private get rules(): ScheduleRules {
    return { registry: this.deps.registry, minIntervalMs: this.deps.config.schedules.minIntervalMs };
  }

  async create(tenant: string, raw: unknown): Promise<{ created: boolean; schedule: ScheduleView }> {
    const now = this.deps.clock();
    const input = parseCreate(raw, now, this.rules);
    const id = input.id ?? this.newId();
    const state: ScheduleState = input.paused ? "paused" : "active";
    const item = this.itemOf(tenant, id, input.spec, state, 1, input.fingerprint, now, now);
    // A repeat of this create answers with the stored schedule and its incarnation; this one is dropped.
    const outcome = await this.deps.store.create(item, this.deps.config.schedules.perTenant);
    if (outcome.created) {
      this.deps.logger.info("schedule created", { tenant, id, nextAt: item.nextAt });
      return { created: true, schedule: viewOfSchedule(item) };
    }
    const existing = viewOfSchedule(outcome.existing);
    if (outcome.existing.fingerprint !== input.fingerprint) throw new ScheduleConflictError(existing);
    return { created: false, schedule: existing };
  }

  async get(tenant: string, id: string): Promise<ScheduleView> {
    return viewOfSchedule(await this.read(tenant, id));
  }

  async list(
    tenant: string,
    options: ScheduleListOptions,
  ): Promise<{ schedules: ScheduleView[]; cursor: string | undefined }> {
    const page = await this.deps.store.list(tenant, options);
    return { schedules: page.items.map(viewOfSchedule), cursor: page.cursor };
  }

  /** The next `count` occurrences from now, in UTC and in the schedule's zone (whatever its state). */
  async next(tenant: string, id: string, count: number): Promise<Occurrence[]> {
    const item = await this.read(tenant, id);
    const evaluate = evaluator({ ...item });
    const out: Occurrence[] = [];
    let t = evaluate.next(this.deps.clock());
    while (t !== undefined && out.length < count) {
      out.push({ at: t, local: localIso(t, item.timezone) });
      t = evaluate.next(t);
    }
    return out;
  }

  /** Applies an edit: a new revision whose occurrences replace the unstarted ones of the old. */
  async update(tenant: string, id: string, raw: unknown): Promise<ScheduleView> {
    const parsed = patchScheduleInput.safeParse(raw);
    if (!parsed.success) throw new ScheduleValidationError(fieldIssues(parsed.error));
    const patch = parsed.data;
    const now = this.deps.clock();
    const before = await this.read(tenant, id);
    const old = viewOfSchedule(before);
    const switchesKind = patch.cron !== undefined || patch.rate !== undefined;
    const iso = (t: number | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
    const startAt = patch.startAt === undefined ? iso(old.startAt) : (patch.startAt ?? undefined);
    const endAt = patch.endAt === undefined ? iso(old.endAt) : (patch.endAt ?? undefined);
    // The body as if created with these values: a later create with it is an idempotent repeat.
    const body = {
      id,
      cron: switchesKind ? patch.cron : old.cron,
      rate: switchesKind ? patch.rate : old.rate,
      timezone: patch.timezone ?? old.timezone,
      startAt,
      endAt,
      event: patch.event ?? old.event,
      overlap: patch.overlap ?? old.overlap,
      jitterSeconds: patch.jitterSeconds ?? old.jitterSeconds,
      catchUp: patch.catchUp ?? old.catchUp,
      paused: before.state === "paused",
    };
    const keepAnchor = body.rate === old.rate && startAt === iso(old.startAt);
    const spec = checkSpec(
      {
        ...body,
        event: { ...body.event, payload: body.event.payload ?? null },
        startAt: startAt === undefined ? undefined : Date.parse(startAt),
        endAt: endAt === undefined ? undefined : Date.parse(endAt),
        anchor: keepAnchor ? before.anchor : undefined,
      },
      now,
      this.rules,
    );
    const state: ScheduleState = before.state === "paused" ? "paused" : "active";
    const item = this.itemOf(
      tenant,
      id,
      spec,
      state,
      before.revision + 1,
      fingerprintOf(body),
      before.createdAt,
      now,
      before,
    );
    await this.replace(item, before);
    return viewOfSchedule(item);
  }

  async pause(tenant: string, id: string): Promise<ScheduleView> {
    const before = await this.read(tenant, id);
    if (before.state !== "active") return viewOfSchedule(before);
    const now = this.deps.clock();
    const { dshard: _s, dnext: _d, ...rest } = before;
    const item: ScheduleItem = { ...rest, state: "paused", revision: before.revision + 1, updatedAt: now };
    await this.replace(item, before);
    return viewOfSchedule(item);
  }

  /** Resumes from the first occurrence after now: what fell in the pause is not caught up. */
  async resume(tenant: string, id: string): Promise<ScheduleView> {
    const before = await this.read(tenant, id);
    if (before.state !== "paused") return viewOfSchedule(before);
    const now = this.deps.clock();
    const item = this.itemOf(
      tenant,
      id,
      { ...viewOfSchedule(before), anchor: before.anchor },
      "active",
      before.revision + 1,
      before.fingerprint,
      before.createdAt,
      now,
      before,
    );
    await this.replace(item, before);
    return viewOfSchedule(item);
  }

  async delete(tenant: string, id: string): Promise<ScheduleView> {
    const before = await this.read(tenant, id);
    if (!(await this.deps.store.delete(tenant, id))) throw new ScheduleNotFoundError(id);
    await this.cancelFor(before);
    this.deps.logger.info("schedule deleted", { tenant, id });
    return viewOfSchedule(before);
  }

  /** Counts by state and the occurrence counters, summed over the tenant's schedules. */
  async stats(tenant: string): Promise<ScheduleStats> {
    const items = await this.deps.store.all(tenant);
    const schedules: Record<ScheduleState, number> = { active: 0, paused: 0, ended: 0 };
    let occurrences = 0;
    let skipped = 0;
    let missed = 0;
    for (const item of items) {
      schedules[item.state]++;
      occurrences += item.occurrences ?? 0;
      skipped += item.skipped ?? 0;
      missed += item.missed ?? 0;
    }
    return { schedules, occurrences, skipped, missed };
  }

  private async read(tenant: string, id: string): Promise<ScheduleItem> {
    const item = await this.deps.store.get(tenant, id);
    if (!item) throw new ScheduleNotFoundError(id);
    return item;
  }

  /** Writes the new revision if nobody changed the schedule meanwhile, then cancels the old one's occurrences. */
  private async replace(item: ScheduleItem, before: ScheduleItem): Promise<void> {
    if (!(await this.deps.store.replace(item, before))) throw new ScheduleChangedError(item.id);
    await this.cancelFor(before);
  }

  private async cancelFor(before: ScheduleItem): Promise<void> {
    const { config, events, clock, logger } = this.deps;
    const cancelled = await cancelOccurrences(events, before, clock(), {
      lookbackMs: config.schedules.missedAfterMs + materializeHorizonMs(config),
      reachMs: materializeHorizonMs(config) + 5_000,
    });
    if (cancelled > 0) logger.info("cancelled unstarted occurrences", { id: before.id, cancelled });
  }

  private itemOf(
    tenant: string,
    id: string,
    spec: ScheduleSpec,
    state: ScheduleState,
    revision: number,
    fingerprint: string,
    createdAt: number,
    now: number,
    previous?: ScheduleItem,
  ): ScheduleItem {
    // A new schedule draws its incarnation; a new revision keeps it. One from before incarnations
    // existed gets one now: its new revision has new occurrence ids either way.
    const incarnation = previous?.incarnation ?? newIncarnation();
    const nextAt = evaluator(spec).next(now);
    const effective: ScheduleState = state === "active" && nextAt === undefined ? "ended" : state;
    const { event } = spec;
    return {
      pk: tenant,
      sk: id,
      tenant,
      id,
      ...(spec.cron !== undefined && { cron: spec.cron }),
      ...(spec.rate !== undefined && { rate: spec.rate }),
      timezone: spec.timezone,
      ...(spec.startAt !== undefined && { startAt: spec.startAt }),
      ...(spec.endAt !== undefined && { endAt: spec.endAt }),
      ...(spec.anchor !== undefined && { anchor: spec.anchor }),
      type: event.type,
      payload: JSON.stringify(event.payload ?? null),
      ...(event.maxAttempts !== undefined && { maxAttempts: event.maxAttempts }),
      ...(event.backoff !== undefined && { backoff: event.backoff }),
      ...(event.callbacks !== undefined && { callbacks: event.callbacks }),
      overlap: spec.overlap,
      jitterSeconds: spec.jitterSeconds,
      catchUp: spec.catchUp,
      state: effective,
      fingerprint,
      revision,
      incarnation,
      ...(nextAt !== undefined && { nextAt }),
      ...ScheduleStore.dueFields(tenant, id, effective, nextAt),
      ...(previous?.lastOccurrenceAt !== undefined && { lastOccurrenceAt: previous.lastOccurrenceAt }),
      ...(previous?.lastOccurrenceId !== undefined && { lastOccurrenceId: previous.lastOccurrenceId }),
      occurrences: previous?.occurrences ?? 0,
      skipped: previous?.skipped ?? 0,
      missed: previous?.missed ?? 0,
      createdAt,
      updatedAt: now,
    };
  }
}
