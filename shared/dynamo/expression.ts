import { type Condition, Placeholders } from "./conditions.ts";
import { EmptyUpdateError } from "./errors.ts";

/**
 * Update, condition and projection expressions from named parts: "set these, add those, remove
 * these, if that". The result spreads into an UpdateItem, Put, Delete or Get input (plain or
 * inside a transaction), with every attribute name aliased and every value a placeholder.
 */

/** The expression fields of a request. Values are omitted when none are used: DynamoDB refuses an empty map. */
export interface ExpressionParts {
  readonly ExpressionAttributeNames: Record<string, string>;
  readonly ExpressionAttributeValues?: Record<string, unknown>;
}

export interface UpdateParts extends ExpressionParts {
  readonly UpdateExpression: string;
  readonly ConditionExpression?: string;
}

export interface ConditionParts extends ExpressionParts {
  readonly ConditionExpression: string;
}

export interface ProjectionParts {
  readonly ProjectionExpression: string;
  readonly ExpressionAttributeNames: Record<string, string>;
}

/** A counter's new value: what it held (0 when absent) plus `by`, in one write. */
export class Increment {
  constructor(readonly by: number) {}
}

export const increment = (by: number): Increment => new Increment(by);

export interface UpdateSpec {
  /** Attributes to set; an undefined value leaves the attribute as it is. */
  readonly set?: Readonly<Record<string, unknown>>;
  /** DynamoDB's ADD: a number added (an absent attribute counts as 0), or elements added to a set. */
  readonly add?: Readonly<Record<string, number | ReadonlySet<unknown> | undefined>>;
  readonly remove?: readonly string[];
  /** The write happens only if this holds; otherwise DynamoDB refuses it (see `failures.ts`). */
  readonly if?: Condition | undefined;
}

export function update(spec: UpdateSpec): UpdateParts {
  const p = new Placeholders();
  const sets = Object.entries(spec.set ?? {})
    .filter(([, value]) => value !== undefined)
    .map(([attribute, value]) => {
      const name = p.name(attribute);
      return value instanceof Increment
        ? `${name} = if_not_exists(${name}, ${p.value(0)}) + ${p.value(value.by)}`
        : `${name} = ${p.value(value)}`;
    });
  const adds = Object.entries(spec.add ?? {})
    .filter(([, value]) => value !== undefined)
    .map(([attribute, value]) => `${p.name(attribute)} ${p.value(value)}`);
  const removes = (spec.remove ?? []).map((attribute) => p.name(attribute));
  const clauses = [
    sets.length > 0 ? `SET ${sets.join(", ")}` : "",
    adds.length > 0 ? `ADD ${adds.join(", ")}` : "",
    removes.length > 0 ? `REMOVE ${removes.join(", ")}` : "",
  ].filter(Boolean);
  if (clauses.length === 0) throw new EmptyUpdateError();
  const condition = spec.if?.render(p);
  return {
    UpdateExpression: clauses.join(" "),
    ...(condition !== undefined && { ConditionExpression: condition }),
    ...parts(p),
  };
}

/** A condition alone, for a Put, a Delete or a transaction's ConditionCheck. */
export function onlyIf(condition: Condition): ConditionParts {
  const p = new Placeholders();
  const expression = condition.render(p);
  return { ConditionExpression: expression, ...parts(p) };
}

/** The attributes a read returns. */
export function projection(attributes: readonly string[]): ProjectionParts {
  const p = new Placeholders();
  const expression = attributes.map((attribute) => p.name(attribute)).join(", ");
  return { ProjectionExpression: expression, ExpressionAttributeNames: p.names };
}

function parts(p: Placeholders): ExpressionParts {
  return {
    ExpressionAttributeNames: p.names,
    ...(Object.keys(p.values).length > 0 && { ExpressionAttributeValues: p.values }),
  };
}
