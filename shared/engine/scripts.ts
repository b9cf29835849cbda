import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";

export type RedisClient = Redis | Cluster;

/** Script name → how many of its arguments are keys. One `.lua` file per script, same name. */
const SCRIPTS = {
  schedule: 6,
  claim: 7,
  start: 4,
  ack: 4,
  retry: 5,
  bury: 5,
  cancel: 7,
  reschedule: 5,
  revive: 6,
  release: 2,
  expire: 5,
  restore: 7,
  forget: 6,
  inspect: 4,
  // Hold admission in front of the stock ledger (shared/ledger/admission.ts).
  hold_admit: 2,
  hold_settle: 2,
  hold_credit: 3,
  hold_rebuild: 4,
  evict: 4,
  horizon: 3,
  // Flow control (docs/flow-control.md): `hold` on a shard; the rest on a tenant's limits tag.
  hold: 4,
  admit: 1,
  free: 1,
  mirror: 1,
  take: 1,
  peek: 1,
} as const;

export type ScriptName = keyof typeof SCRIPTS;
type ScriptArg = string | number;
type ScriptCall = (...args: ScriptArg[]) => Promise<unknown>;

const INCLUDE = /^-- @include (\w+)$/m;

/**
 * Reads a script and inlines its `-- @include name` lines from `lua/includes/`. The files are found
 * next to this module both in the source tree and in a Lambda bundle (which copies `lua/` beside
 * the bundle's entry file).
 */
export function scriptSource(name: ScriptName): string {
  const read = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), "utf8");
  let source = read(`${name}.lua`);
  for (let match = INCLUDE.exec(source); match; match = INCLUDE.exec(source)) {
    source = source.replace(match[0], read(`includes/${match[1]}.lua`));
  }
  return source;
}

const defined = new WeakSet<object>();
const PREFIX = "hourglass_";

/** Loads every script once per client with `defineCommand` (EVALSHA, with a fallback to EVAL). */
export function defineScripts(client: RedisClient): void {
  if (defined.has(client)) return;
  for (const [name, numberOfKeys] of Object.entries(SCRIPTS)) {
    client.defineCommand(`${PREFIX}${name}`, { numberOfKeys, lua: scriptSource(name as ScriptName) });
  }
  defined.add(client);
}

/** Runs a defined script. Keys first, then arguments, as the script's header lists them. */
export function runScript(
  client: RedisClient,
  name: ScriptName,
  keys: readonly string[],
  args: readonly ScriptArg[],
): Promise<unknown> {
  if (keys.length !== SCRIPTS[name]) {
    throw new Error(`script ${name} takes ${SCRIPTS[name]} keys, got ${keys.length}`);
  }
  const call = (client as unknown as Record<string, ScriptCall>)[`${PREFIX}${name}`];
  if (!call) throw new Error(`script ${name} is not defined on this client; call defineScripts first`);
  return call.call(client, ...keys, ...args);
}
