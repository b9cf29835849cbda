/**
 * Conditions and updates for the journal, built from named parts so each write reads as what it
 * means ("if pending, set these, remove those") rather than as a hand-assembled expression.
 */
export interface Condition {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
}

export interface Update {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, unknown>;
}

/** The event has not finished: it may still be dispatched, rescheduled or cancelled. */
export const isPending: Condition = {
  expression: "#cond_status IN (:cond_scheduled, :cond_retrying)",
  names: { "#cond_status": "status" },
  values: { ":cond_scheduled": "scheduled", ":cond_retrying": "retrying" },
};

/** The event is pending and its version (absent means 0) is below `version`. */
export function olderThan(version: number): Condition {
  return {
    expression: `${isPending.expression} AND (attribute_not_exists(#cond_version) OR #cond_version < :cond_version)`,
    names: { ...isPending.names, "#cond_version": "version" },
    values: { ...isPending.values, ":cond_version": version },
  };
}

/** The event is a dead letter. */
export const isDead: Condition = {
  expression: "#cond_status = :cond_dead",
  names: { "#cond_status": "status" },
  values: { ":cond_dead": "dead" },
};

export function update(parts: { set: Record<string, unknown>; remove?: readonly string[] }): Update {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const sets = Object.entries(parts.set)
    .filter(([, value]) => value !== undefined)
    .map(([field, value]) => {
      names[`#${field}`] = field;
      values[`:${field}`] = value;
      return `#${field} = :${field}`;
    });
  const removes = (parts.remove ?? []).map((field) => {
    names[`#${field}`] = field;
    return `#${field}`;
  });
  const expression = [
    sets.length ? `SET ${sets.join(", ")}` : "",
    removes.length ? `REMOVE ${removes.join(", ")}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  return { expression, names, values };
}
