import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { dynamoDbLocalArgs, ensureLoopbackLauncher } from "../../shared/local/dynamodb-local.ts";

const PATH = process.env.PATH;
const dirs: string[] = [];
afterEach(() => {
  process.env.PATH = PATH;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A jar folder in a cache of its own, where no launcher has been compiled yet. */
function freshHome(): string {
  const cache = mkdtempSync(join(tmpdir(), "hg-launcher-"));
  dirs.push(cache);
  const home = join(cache, "dynamodb-local-2.9.30");
  mkdirSync(home);
  return home;
}

describe("DynamoDB Local's loopback launcher (issue 33, finding 12)", () => {
  it("runs the jar through the launcher class, with the jar's own arguments", () => {
    const args = dynamoDbLocalArgs("/opt/ddb", 8123, "/data/ddb", "/cache/launcher");
    const cp = args[args.indexOf("-cp") + 1]!;
    expect(cp.split(":")).toEqual([
      "/cache/launcher",
      "/opt/ddb/DynamoDBLocal.jar",
      "/opt/ddb/DynamoDBLocal_lib/*",
    ]);
    expect(args[args.indexOf("-cp") + 2]).toBe("LoopbackDynamoDbLocal");
    expect(args).not.toContain("-jar");
    expect(args.slice(-6)).toEqual([
      "-sharedDb",
      "-disableTelemetry",
      "-port",
      "8123",
      "-dbPath",
      "/data/ddb",
    ]);
  });

  it("falls back to the jar alone where there is no javac, and says so by returning no launcher", () => {
    const home = freshHome();
    process.env.PATH = join(home, "no-such-bin");
    expect(ensureLoopbackLauncher(home)).toBeUndefined();
    const args = dynamoDbLocalArgs(home, 8123, undefined);
    expect(args).toContain("-jar");
    expect(args).not.toContain("LoopbackDynamoDbLocal");
  });
});
