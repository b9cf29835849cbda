import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import { ScriptCode } from "./codes.ts";

export type RedisClient = Redis | Cluster;

/**
 * Each script's keys, by name and in order: the one declaration of what a script touches. The
 * loader turns it into the script's `K` table (`K.due`, `K.meta`, …), so a script never indexes
 * `KEYS` itself, and `runScript` builds the KEYS array from it, so no caller can pass keys in
 * the wrong order or forget one. One `.lua` file per script, same name.
 */
const SCRIPT_KEYS = {
  schedule: ["due", "tenants", "leased", "body", "meta", "stats", "cancelled"],
  claim: ["due", "tenants", "leased", "body", "meta", "stats", "epoch", "quarantine"],
  start: ["leased", "body", "meta", "stats"],
  ack: ["leased", "body", "meta", "stats"],
  retry: ["due", "tenants", "leased", "body", "meta", "stats"],
  bury: ["leased", "dead", "body", "meta", "stats"],
  cancel: ["due", "tenants", "leased", "dead", "body", "meta", "stats", "cancelled", "recovery"],
  reschedule: ["due", "tenants", "leased", "body", "meta", "stats"],
  revive: ["due", "tenants", "leased", "dead", "body", "meta", "stats"],
  release: ["leased", "meta"],
  expire: ["dead", "body", "meta", "stats", "cancelled"],
  restore: ["due", "tenants", "dead", "body", "meta", "stats", "cancelled", "quarantine"],
  forget: ["due", "tenants", "leased", "dead", "body", "meta", "stats"],
  inspect: ["due", "leased", "body", "meta"],
  // The near horizon (shared/events/horizon.ts): the loader's state, and evicting a far entry.
  horizon: ["horizon", "epoch", "rebuild"],
  evict: ["due", "tenants", "body", "meta", "stats"],
  // The recovery sweep (shared/events/recovery.ts): its per-shard watermark and pass.
  recovery: ["recovery", "epoch", "rebuild"],
  recovery_save: ["recovery"],
  recovery_lower: ["recovery"],
  // A cancel's tombstone found stale by a later create (shared/events/tombstones.ts).
  tombstone_drop: ["cancelled"],
  // Flow control (docs/flow-control.md): `hold` on a shard; the rest on a tenant's limits tag.
  hold: ["leased", "body", "meta", "stats"],
  admit: ["running"],
  free: ["running"],
  mirror: ["config"],
  take: ["creates"],
  peek: ["running"],
  // Notifications (shared/notifications/redis-stream.ts): a batch appended to a tenant's stream.
  publish: ["stream"],
  // Hold admission in front of the stock ledger (shared/ledger/admission.ts).
  hold_admit: ["level", "pending"],
  hold_settle: ["level", "pending"],
  hold_credit: ["level", "carry", "lock"],
  hold_rebuild: ["level", "pending", "carry", "lock"],
} as const satisfies Record<string, readonly string[]>;

export type ScriptName = keyof typeof SCRIPT_KEYS;
type ScriptArg = string | number;
type ScriptCall = (...args: ScriptArg[]) => Promise<unknown>;

const INCLUDE = /^-- @include (\w+)$/m;

/** `ScriptCode` as a Lua table, so scripts return `{CODE.NOT_FOUND}` rather than a bare number. */
const CODE_TABLE = Object.entries(ScriptCode)
  .filter(([name]) => Number.isNaN(Number(name)))
  .map(([name, code]) => `${name} = ${code}`)
  .join(", ");

/** What the loader puts before every script: its keys by name, and the return codes. */
function preamble(name: ScriptName): string {
  const keys = SCRIPT_KEYS[name].map((key, i) => `${key} = KEYS[${i + 1}]`).join(", ");
  return `-- generated from SCRIPT_KEYS and ScriptCode in scripts.ts\nlocal K = { ${keys} }\nlocal CODE = { ${CODE_TABLE} }\n`;
}

/**
 * Reads a script, puts the generated `K` and `CODE` tables before it, and inlines its
 * `-- @include name` lines from `lua/includes/`. The files are found
 * next to this module both in the source tree and in a Lambda bundle (which copies `lua/` beside
 * the bundle's entry file).
 */
export function scriptSource(name: ScriptName): string {
  const read = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), "utf8");
  let source = preamble(name) + read(`${name}.lua`);
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
  for (const [name, keys] of Object.entries(SCRIPT_KEYS)) {
    client.defineCommand(`${PREFIX}${name}`, {
      numberOfKeys: keys.length,
      lua: scriptSource(name as ScriptName),
    });
  }
  defined.add(client);
}

/** The names of a script's keys, in the order its `K` table binds them. */
export function scriptKeys(name: ScriptName): readonly string[] {
  return SCRIPT_KEYS[name];
}

/** The keys a script takes, by name: a shard's `ShardKeys` (or any object with those fields). */
export type KeysOf<N extends ScriptName> = { readonly [K in (typeof SCRIPT_KEYS)[N][number]]: string };

/** Runs a defined script: its keys come from the declaration, in its order, then the arguments. */
export function runScript<N extends ScriptName>(
  client: RedisClient,
  name: N,
  keys: KeysOf<N>,
  args: readonly ScriptArg[],
): Promise<unknown> {
  const call = (client as unknown as Record<string, ScriptCall>)[`${PREFIX}${name}`];
  if (!call) throw new Error(`script ${name} is not defined on this client; call defineScripts first`);
  const named = keys as Readonly<Record<string, string>>;
  return call.call(client, ...SCRIPT_KEYS[name].map((key) => named[key]!), ...args);
}
