import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Runs the `hourglass` CLI as a child process against `base`; never throws, returns the exit code. */
export async function runCli(base: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run("node", ["scripts/hourglass.mjs", "--url", base, ...args], {
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
