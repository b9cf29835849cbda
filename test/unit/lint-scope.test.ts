import { execFile } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const run = promisify(execFile);
const scratch = [`body-${process.pid}.json`, `scratch-${process.pid}.js`];

afterEach(() => {
  for (const file of scratch) rmSync(file, { force: true });
});

/**
 * The README's own CLI example (`--payload @body.json`) leads a user to keep JSON files at the
 * root. `npm test` lints the project's sources (biome.json `files.includes`), not such files.
 */
describe("npm run lint", () => {
  it("ignores a user's scratch files at the project root", async () => {
    writeFileSync(scratch[0]!, '{"url":   "http://127.0.0.1:8080/hook",,, not even JSON');
    writeFileSync(scratch[1]!, "var   unused = eval('1')   \n");
    const result = await run("npx", ["biome", "check", "."], { timeout: 60_000 }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        stdout: `${error.stdout}${error.stderr}`,
      }),
    );
    expect(result.stdout).not.toContain(scratch[0]);
    expect(result.stdout).not.toContain(scratch[1]);
    expect(result.code).toBe(0);
  });
});
