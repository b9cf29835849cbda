import type { ScheduleState, SeededSchedule } from "./types.ts";

/**
 * The EventBridge Scheduler schedules the harness seeds (the dispatcher's), kept as GetSchedule
 * returns them. UpdateSchedule replaces every field as AWS does (a field left out is reset), and
 * each update is told to the listeners, which is how the harness stops invoking the dispatcher
 * while its schedule is DISABLED.
 */
export interface StoredSchedule {
  readonly name: string;
  readonly group: string;
  readonly creationDate: number;
  readonly lastModificationDate: number;
  /** The schedule's own fields as last set: State, ScheduleExpression, Target, FlexibleTimeWindow … */
  readonly fields: Readonly<Record<string, unknown>>;
}

type Listener = (group: string, name: string, state: ScheduleState) => void;

export class ScheduleStore {
  private readonly schedules = new Map<string, StoredSchedule>();
  private readonly listeners: Listener[] = [];

  constructor(seeds: readonly SeededSchedule[]) {
    const now = Date.now() / 1000;
    for (const seed of seeds) {
      this.schedules.set(key(seed.group, seed.name), {
        name: seed.name,
        group: seed.group,
        creationDate: now,
        lastModificationDate: now,
        fields: {
          State: seed.state,
          ScheduleExpression: seed.expression,
          Target: { Arn: seed.targetArn, RoleArn: seed.roleArn },
          FlexibleTimeWindow: { Mode: "OFF" },
          ActionAfterCompletion: "NONE",
        },
      });
    }
  }

  get(group: string, name: string): StoredSchedule | undefined {
    return this.schedules.get(key(group, name));
  }

  state(group: string, name: string): ScheduleState | undefined {
    const state = this.get(group, name)?.fields.State;
    return state === "ENABLED" || state === "DISABLED" ? state : undefined;
  }

  /** Replaces an existing schedule's fields; false when there is no such schedule. */
  update(group: string, name: string, fields: Readonly<Record<string, unknown>>): boolean {
    const current = this.get(group, name);
    if (!current) return false;
    // A schedule without a State is ENABLED, as UpdateSchedule's default is.
    const state: ScheduleState = fields.State === "DISABLED" ? "DISABLED" : "ENABLED";
    this.schedules.set(key(group, name), {
      ...current,
      lastModificationDate: Date.now() / 1000,
      fields: { ...fields, State: state },
    });
    for (const listener of this.listeners) listener(group, name, state);
    return true;
  }

  onChange(listener: Listener): void {
    this.listeners.push(listener);
  }
}

function key(group: string, name: string): string {
  return `${group}/${name}`;
}
