import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Generous: each run starts Node and the prebuilt CLI (rebuilt first if a source changed), slow on a loaded two-core machine (an
 * import of 1,200 events outlived 120 s at a load average of 25). Within the CLI tests' 300 s.
 */
const CLI_TIMEOUT_MS = 240_000;

/** Runs the `hourglass` CLI as a child process against `base`; never throws, returns the exit code. */
export function runCli(base: string, ...args: string[]) {
  return runCliWith({}, base, ...args);
}

/** As `runCli`, with extra environment variables (NO_COLOR, …). */
export async function runCliWith(env: Record<string, string>, base: string, ...args: string[]) {
  try {
    const { stdout, stderr } = await run("node", ["scripts/hourglass.mjs", "--url", base, ...args], {
      timeout: CLI_TIMEOUT_MS,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number | null; signal: string | null; stdout: string; stderr: string };
    // Killed (by the timeout): say so, rather than an exit code of null.
    if (e.code === null) throw new Error(`hourglass ${args.join(" ")} was killed (${e.signal}): ${e.stderr}`);
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * Runs the CLI on a pseudo-terminal (util-linux `script`), as a person at a terminal would: stdout
 * is a TTY there. Returns what the terminal showed.
 */
export async function runCliOnTerminal(env: Record<string, string>, base: string, ...args: string[]) {
  const quoted = ["node", "scripts/hourglass.mjs", "--url", base, ...args]
    .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
    .join(" ");
  // A person's terminal: without CI, which makes cli-table3's colour library switch colour off.
  const { CI: _ci, ...personal } = process.env;
  const { stdout } = await run("script", ["-qec", quoted, "/dev/null"], {
    timeout: CLI_TIMEOUT_MS,
    env: { ...personal, ...env },
  });
  return stdout;
}
