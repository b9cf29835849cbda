import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
let scratch: string;

/** Runs `npm run deps`' check on a small tree written for the case: exit code and output. */
async function cruise(files: Record<string, string>): Promise<{ code: number; output: string }> {
  const dir = mkdtempSync(join(scratch, "case-"));
  cpSync(join(root, ".dependency-cruiser.cjs"), join(dir, ".dependency-cruiser.cjs"));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true } }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const bin = join(root, "node_modules/.bin/depcruise");
  return run(bin, ["shared", "--config", ".dependency-cruiser.cjs"], { cwd: dir, timeout: 60_000 }).then(
    ({ stdout }) => ({ code: 0, output: stdout }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      output: `${error.stdout}${error.stderr}`,
    }),
  );
}

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), "hourglass-layers-"));
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Issue 14's rule: no folder imports one above it, and nothing is circular. */
describe("npm run deps", () => {
  it("accepts imports that point down", async () => {
    const result = await cruise({
      "shared/model/event.ts": "export interface E { id: string }\n",
      "shared/engine/index.ts":
        'import type { E } from "../model/event.ts";\nexport const e = (x: E) => x;\n',
      "shared/events/service.ts": 'import { e } from "../engine/index.ts";\nexport const s = e;\n',
    });
    expect(result.output).toContain("no dependency violations");
    expect(result.code).toBe(0);
  });

  it("refuses an import from a layer above, one between folders of a layer, and a cycle", async () => {
    const result = await cruise({
      // Upward: the engine reaching into the flows that use it.
      "shared/events/service.ts": "export const s = 1;\n",
      "shared/engine/index.ts": 'import { s } from "../events/service.ts";\nexport const e = s;\n',
      // Sideways: two folders of the same layer.
      "shared/journal/item.ts": "export const i = 1;\n",
      "shared/leases/lease.ts": 'import { i } from "../journal/item.ts";\nexport const l = i;\n',
      // Circular, inside one folder.
      "shared/ledger/a.ts": 'import { b } from "./b.ts";\nexport const a = () => b;\n',
      "shared/ledger/b.ts": 'import { a } from "./a.ts";\nexport const b = () => a;\n',
    });
    expect(result.output).toContain("shared/engine/index.ts → shared/events/service.ts");
    expect(result.output).toContain("shared/leases/lease.ts → shared/journal/item.ts");
    expect(result.output).toMatch(/no-circular: shared\/ledger\/(a|b)\.ts/);
    expect(result.output).not.toContain("shared/events/service.ts →");
    expect(result.code).not.toBe(0);
  });
});
