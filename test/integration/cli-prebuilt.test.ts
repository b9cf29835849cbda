import { execFile } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);

/**
 * The `hourglass` command runs a bundle esbuild built (issue 35, item 5), never stale code: each
 * case works in a copy of the project's sources (so files can be changed and dated freely) with
 * links to its installed packages. How fast it starts is measured, not asserted (README).
 */
const repo = resolve(".");
const sandboxes: string[] = [];

/** A copy of shared/, the client package's sources and the two scripts, with node_modules linked package by package, minus `without`. */
function sandbox(without: readonly string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), "hg-prebuilt-"));
  sandboxes.push(dir);
  cpSync(join(repo, "shared"), join(dir, "shared"), { recursive: true });
  // shared/client re-exports the typed client from its package's sources.
  for (const part of ["src", "package.json"]) {
    cpSync(join(repo, "packages", "client", part), join(dir, "packages", "client", part), {
      recursive: true,
    });
  }
  mkdirSync(join(dir, "scripts"));
  for (const script of ["hourglass.mjs", "build-cli.mjs"]) {
    cpSync(join(repo, "scripts", script), join(dir, "scripts", script));
  }
  cpSync(join(repo, "package.json"), join(dir, "package.json"));
  mkdirSync(join(dir, "node_modules"));
  for (const name of readdirSync(join(repo, "node_modules"))) {
    if (without.includes(name)) continue;
    symlinkSync(join(repo, "node_modules", name), join(dir, "node_modules", name));
  }
  return dir;
}

async function hourglass(dir: string, ...args: string[]) {
  const { stdout, stderr } = await run("node", [join(dir, "scripts", "hourglass.mjs"), ...args], {
    timeout: 240_000,
  });
  return { stdout, stderr };
}

afterAll(() => {
  for (const dir of sandboxes) rmSync(dir, { recursive: true, force: true });
});

describe("the prebuilt CLI", { timeout: 300_000 }, () => {
  it("builds the bundle when it is missing, reuses it, and rebuilds it when a source changes", async () => {
    const dir = sandbox();
    const bundle = join(dir, "dist", "cli", "hourglass.mjs");
    expect(existsSync(bundle)).toBe(false);
    const first = await hourglass(dir, "--help");
    expect(first.stdout).toContain("Schedule, inspect and cancel Hourglass events");
    expect(first.stderr).toBe("");
    // Built from this project's sources; the dependencies are inside it, not watched file by file.
    const inputs: string[] = JSON.parse(readFileSync(join(dir, "dist", "cli", "inputs.json"), "utf8"));
    expect(inputs).toContain("shared/cli/program.ts");
    expect(inputs.some((input) => input.includes("node_modules"))).toBe(false);

    const built = statSync(bundle).mtimeMs;
    await hourglass(dir, "--help");
    expect(statSync(bundle).mtimeMs).toBe(built);

    // An edit (a pull, a checkout) makes a source newer than the bundle: the next call runs it.
    const program = join(dir, "shared", "cli", "program.ts");
    writeFileSync(
      program,
      readFileSync(program, "utf8").replace(
        "Schedule, inspect and cancel Hourglass events",
        "Edited since the build",
      ),
    );
    const later = new Date(built + 5_000);
    utimesSync(program, later, later);
    const edited = await hourglass(dir, "--help");
    expect(edited.stdout).toContain("Edited since the build");
    expect(statSync(bundle).mtimeMs).toBeGreaterThan(built);
  });

  it("loads the AWS SDK's CommonJS clients on demand from the bundle, with their named exports", async () => {
    // No credentials anywhere: each command gets as far as asking for them, so its client was
    // constructed (bundled, a CommonJS client's exports sit under `default`: "not a constructor").
    const env: Record<string, string | undefined> = {
      ...process.env,
      AWS_PROFILE: "hg-no-such-profile",
      AWS_CONFIG_FILE: "/dev/null",
      AWS_SHARED_CREDENTIALS_FILE: "/dev/null",
      AWS_EC2_METADATA_DISABLED: "true",
      AWS_ACCESS_KEY_ID: undefined,
      AWS_SECRET_ACCESS_KEY: undefined,
      AWS_SESSION_TOKEN: undefined,
    };
    for (const args of [
      ["status", "--aws", "--region", "us-east-1"],
      ["schedules", "import", "--from-eventbridge", "--dry-run", "--aws-region", "us-east-1"],
    ]) {
      const failed = await run("node", ["scripts/hourglass.mjs", ...args], { env, timeout: 240_000 }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code, args.join(" ")).toBe(1);
      expect(failed?.stderr, args.join(" ")).toContain("Could not load credentials");
      expect(failed?.stderr, args.join(" ")).not.toContain("is not a constructor");
      // One line, as every other failure a user can meet: no stack.
      expect(failed?.stderr, args.join(" ")).not.toMatch(/\n\s+at /);
    }
  });

  it("runs from source through tsx, and says so, when there is no bundle and no esbuild to build one", async () => {
    const dir = sandbox(["esbuild", "@esbuild", ".bin"]);
    const result = await hourglass(dir, "--help");
    expect(result.stdout).toContain("Schedule, inspect and cancel Hourglass events");
    expect(result.stderr).toContain(
      "[hourglass] the prebuilt CLI is missing or stale and could not be built",
    );
    expect(result.stderr).toContain("npm run build:cli");
    expect(existsSync(join(dir, "dist", "cli", "hourglass.mjs"))).toBe(false);
  });
});
