/**
 * Conditions built from named parts ("pending and older than v"), never hand-written strings. A
 * condition is rendered only once it joins an expression (see `expression.ts`), so every
 * placeholder comes from one counter and two parts can never pick the same one.
 */

/** The placeholders of one request: each attribute name aliased once, each value given its own. */
export class Placeholders {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  private readonly aliases = new Map<string, string>();
  private valueCount = 0;

  /**
   * `#status` for a plain name, so expressions stay readable; `#_0`, `#_1`… for a name that
   * cannot stand in a placeholder (`-`, `.`). Every name is aliased, so a reserved word is never a problem.
   */
  name(attribute: string): string {
    let alias = this.aliases.get(attribute);
    if (alias === undefined) {
      // A plain alias starts with a letter, a generated one with `_`: they never meet.
      alias = /^[A-Za-z][A-Za-z0-9_]*$/.test(attribute) ? `#${attribute}` : `#_${this.aliases.size}`;
      this.aliases.set(attribute, alias);
      this.names[alias] = attribute;
    }
    return alias;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.valueCount++}`;
    this.values[placeholder] = value;
    return placeholder;
  }
}

/** A condition, rendered against the placeholders of the request it joins. */
export interface Condition {
  readonly render: (placeholders: Placeholders) => string;
}

export const exists = (attribute: string): Condition => ({
  render: (p) => `attribute_exists(${p.name(attribute)})`,
});

export const notExists = (attribute: string): Condition => ({
  render: (p) => `attribute_not_exists(${p.name(attribute)})`,
});

const comparison =
  (operator: "=" | "<>" | "<" | "<=" | ">" | ">=") =>
  (attribute: string, value: unknown): Condition => ({
    render: (p) => `${p.name(attribute)} ${operator} ${p.value(value)}`,
  });

export const equals = comparison("=");
export const notEquals = comparison("<>");
export const lessThan = comparison("<");
export const atMost = comparison("<=");
export const greaterThan = comparison(">");
export const atLeast = comparison(">=");

/** The attribute holds one of `values`. */
export const oneOf = (attribute: string, values: readonly unknown[]): Condition => ({
  render: (p) => `${p.name(attribute)} IN (${values.map((value) => p.value(value)).join(", ")})`,
});

export const and = (...conditions: readonly Condition[]): Condition => ({
  render: (p) => conditions.map((condition) => condition.render(p)).join(" AND "),
});

/** Parenthesised, since AND binds tighter than OR: `and(a, or(b, c))` means what it says. */
export const or = (...conditions: readonly Condition[]): Condition => ({
  render: (p) => `(${conditions.map((condition) => condition.render(p)).join(" OR ")})`,
});

/** The attribute (a set, a list or a string) contains `value`. */
export const contains = (attribute: string, value: unknown): Condition => ({
  render: (p) => `contains(${p.name(attribute)}, ${p.value(value)})`,
});

/** The attribute (a set, a list, a map or a string) has fewer than `n` elements. */
export const sizeBelow = (attribute: string, n: number): Condition => ({
  render: (p) => `size(${p.name(attribute)}) < ${p.value(n)}`,
});

/** Parenthesised, so `not(and(a, b))` negates the whole of it. */
export const not = (condition: Condition): Condition => ({
  render: (p) => `(NOT ${condition.render(p)})`,
});
