import { UnresolvedReferenceError } from "./errors.ts";

/**
 * What a logical id stands for once "deployed" on the stand-ins: its `Ref` value and the attributes
 * `Fn::GetAtt` may ask for. The harness builds one per resource it stands up (table names, queue
 * URLs, secret ARNs, the cache's endpoint); everything the template says is resolved through them,
 * so the functions see the same values CloudFormation would hand them, only pointing here.
 */
export interface Binding {
  readonly ref: string;
  readonly attributes: Readonly<Record<string, string>>;
}

export interface ResolveContext {
  readonly region: string;
  readonly accountId: string;
  readonly stackName: string;
  readonly bindings: ReadonlyMap<string, Binding>;
}

const PSEUDO = (context: ResolveContext): Record<string, string> => ({
  "AWS::Region": context.region,
  "AWS::AccountId": context.accountId,
  "AWS::Partition": "aws",
  "AWS::URLSuffix": "amazonaws.com",
  "AWS::StackName": context.stackName,
  "AWS::StackId": `arn:aws:cloudformation:${context.region}:${context.accountId}:stack/${context.stackName}/00000000-0000-4000-8000-000000000000`,
  "AWS::NoValue": "",
});

/**
 * Resolves CloudFormation's intrinsic functions in `value` (Ref, Fn::GetAtt, Fn::Join, Fn::Sub,
 * Fn::Select, Fn::Split) against the bindings. A reference the harness cannot answer throws, naming
 * `where` it was met: a value silently left unresolved would reach a function as garbage and fail
 * far from its cause.
 */
export function resolve(value: unknown, context: ResolveContext, where: string): unknown {
  if (Array.isArray(value)) return value.map((item, i) => resolve(item, context, `${where}[${i}]`));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value);
  if (entries.length === 1) {
    const [name, argument] = entries[0]!;
    switch (name) {
      case "Ref":
        return ref(String(argument), context, where);
      case "Fn::GetAtt": {
        const [id, attribute] = Array.isArray(argument) ? argument : String(argument).split(/\.(.*)/s);
        return getAtt(String(id), String(attribute), context, where);
      }
      case "Fn::Join": {
        const [separator, parts] = argument as [string, unknown[]];
        const resolved = resolve(parts, context, where) as unknown[];
        for (const part of resolved)
          if (part !== null && typeof part === "object")
            throw new UnresolvedReferenceError(
              where,
              `Fn::Join of a non-string part ${JSON.stringify(part)}`,
            );
        return resolved.map((part) => String(part)).join(separator);
      }
      case "Fn::Select": {
        const [index, list] = argument as [unknown, unknown];
        const items = resolve(list, context, where) as unknown[];
        return items[Number(resolve(index, context, where))];
      }
      case "Fn::Split": {
        const [separator, source] = argument as [string, unknown];
        return String(resolve(source, context, where)).split(separator);
      }
      case "Fn::Sub":
        return sub(argument, context, where);
    }
    // Fn::If, Fn::ImportValue, Fn::FindInMap…: the harness does not evaluate them, so it says so.
    if (name.startsWith("Fn::"))
      throw new UnresolvedReferenceError(where, `${name} is not resolved by the harness`);
  }
  return Object.fromEntries(entries.map(([key, item]) => [key, resolve(item, context, `${where}.${key}`)]));
}

/** `resolve` for a place that must hold a string (an environment variable, an ARN). */
export function resolveString(value: unknown, context: ResolveContext, where: string): string {
  const resolved = resolve(value, context, where);
  if (typeof resolved === "string") return resolved;
  if (typeof resolved === "number" || typeof resolved === "boolean") return String(resolved);
  throw new UnresolvedReferenceError(where, `expected a string, got ${JSON.stringify(resolved)}`);
}

function ref(id: string, context: ResolveContext, where: string): string {
  const pseudo = PSEUDO(context)[id];
  if (pseudo !== undefined) return pseudo;
  const binding = context.bindings.get(id);
  if (!binding) throw new UnresolvedReferenceError(where, `Ref ${id}: no such resource is stood up`);
  return binding.ref;
}

function getAtt(id: string, attribute: string, context: ResolveContext, where: string): string {
  const binding = context.bindings.get(id);
  const value = binding?.attributes[attribute];
  if (value === undefined) {
    throw new UnresolvedReferenceError(
      where,
      `Fn::GetAtt ${id}.${attribute}: ${binding ? "attribute not known for this resource" : "no such resource is stood up"}`,
    );
  }
  return value;
}

function sub(argument: unknown, context: ResolveContext, where: string): string {
  const [template, variables] = Array.isArray(argument)
    ? (argument as [string, Record<string, unknown>])
    : [String(argument), {}];
  const locals = Object.fromEntries(
    Object.entries(variables ?? {}).map(([key, item]) => [key, resolveString(item, context, where)]),
  );
  return template.replace(/\$\{([^}!]+)\}/g, (_, name: string) => {
    if (name in locals) return locals[name]!;
    if (name.includes(".")) {
      const [id, attribute] = name.split(/\.(.*)/s) as [string, string];
      return getAtt(id, attribute, context, where);
    }
    return ref(name, context, where);
  });
}
