import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ScriptCode } from "../../shared/engine/codes.ts";
import { type ScriptName, scriptKeys, scriptSource } from "../../shared/engine/scripts.ts";

const LUA = new URL("../../shared/engine/lua/", import.meta.url);
const files = readdirSync(LUA).filter((file) => file.endsWith(".lua"));
const names = files.map((file) => file.replace(/\.lua$/, "") as ScriptName);
const raw = (name: string) => readFileSync(new URL(`${name}.lua`, LUA), "utf8");

/**
 * Issue 14: a script's keys are declared once, by name. The loader binds them to `K`, `runScript`
 * passes them in that order, and each header lists the same names, so a reordering or a key used
 * without being declared fails here instead of silently touching the wrong key.
 */
describe("Lua scripts and their declarations", () => {
  it("every script file has a key declaration, and every declaration a file", () => {
    for (const name of names) expect(scriptKeys(name), name).toBeDefined();
    expect(names.length).toBeGreaterThanOrEqual(26);
  });

  it.each(names)("%s: the header lists the declared keys in order, and the code uses only those", (name) => {
    const source = raw(name);
    const declared = scriptKeys(name);
    const header = /^\s*KEYS\s+(.*?)\s+\(declared by name in scripts\.ts\)$/m.exec(source);
    expect(header?.[1]?.split(/\s+/)).toEqual(declared.map((key) => `K.${key}`));
    const body = source.slice(source.indexOf("]]") + 2);
    expect(body).not.toMatch(/KEYS\[/);
    const used = new Set([...body.matchAll(/\bK\.(\w+)/g)].map((match) => match[1]));
    for (const key of used) expect(declared, `${name} uses K.${key}`).toContain(key);
  });

  // These answer with values, not ScriptCodes: admitted 0|1, slots freed, written 0|1, taken 1|0,
  // allowances, Redis's clock.
  const VALUES = new Set(["admit", "free", "mirror", "take", "peek", "horizon"]);
  it.each(names.filter((name) => !VALUES.has(name)))(
    "%s: returns named codes, never bare numbers",
    (name) => {
      const body = raw(name).slice(raw(name).indexOf("]]") + 2);
      expect(body).not.toMatch(/return \{\s*\d/);
      expect(body).not.toMatch(/^\s*(out|codes)\[#\w+ \+ 1\] = \d/m);
    },
  );

  // Fair claims (docs/flow-control.md): waiting events live in per-tenant sets kept with `tenants`
  // and a count, so every read or write of them goes through includes/due.lua, and a script that
  // writes must declare both keys.
  const INCLUDES = new URL("includes/", LUA);
  const includes = readdirSync(INCLUDES).filter((file) => file.endsWith(".lua") && file !== "due.lua");
  const writesDue =
    /\b(ZADD|ZREM|ZPOPMIN|ZPOPMAX|ZINCRBY|ZREMRANGEBY\w+|ZMPOP|DEL|UNLINK)"\s*,\s*[kK]\.due\b/;
  it.each([...files, ...includes.map((file) => `includes/${file}`)])(
    "%s: reads and writes `due` only through includes/due.lua",
    (file) => {
      const source = readFileSync(new URL(file, LUA), "utf8");
      expect(source).not.toMatch(writesDue);
      expect(source).not.toMatch(/(callInSlices|unpack)\([^)]*[kK]\.due\b/);
      // Reads too (issue 33): `due` is only the legacy inbox, and a waiting event is in its
      // tenant's set, so a read of `due` alone would miss it; dueScore reads both.
      expect(source).not.toMatch(/"\w+"\s*,\s*[kK]\.due\b/);
    },
  );
  it.each(names)("%s: declares `tenants` when it changes `due`", (name) => {
    const body = raw(name).slice(raw(name).indexOf("]]") + 2);
    if (/\b(dueAdd|dueAddMany|dueRem|dueRemMany|dropEntry|quarantine)\(/.test(body))
      expect(scriptKeys(name)).toEqual(expect.arrayContaining(["due", "tenants"]));
  });

  it("the loader binds K in the declared order and CODE to the enum's values", () => {
    const source = scriptSource("bury");
    expect(source).toContain(
      "local K = { leased = KEYS[1], dead = KEYS[2], body = KEYS[3], meta = KEYS[4], stats = KEYS[5] }",
    );
    expect(source).toContain(`NOT_FOUND = ${ScriptCode.NOT_FOUND}`);
    expect(source).toContain(`TOMBSTONED = ${ScriptCode.TOMBSTONED}`);
    expect(source).not.toMatch(/^-- @include/m);
  });
});
