import { execFile } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../shared/config.ts";
import { deriveTenantSecret } from "../../shared/handlers/signing.ts";
import { WEBHOOK_SECRET_FILE } from "../../shared/webhook-secret.ts";
import { useApiServer } from "../support/server.ts";

/** The constant local mode signed with before issue 33: public, in the source. */
const OLD_CONSTANT_MASTER = "hourglass-local-development-secret";

const dirs: string[] = [];
const freshDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "hg-secret-"));
  dirs.push(dir);
  return join(dir, "data");
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const localSecret = (dataDir: string, env: Record<string, string> = {}) =>
  loadConfig({}, { HOURGLASS_MODE: "local", HOURGLASS_DATA_DIR: dataDir, ...env }).webhook.secret;

describe("local webhook signing with several tenants (issue 33, finding 9)", () => {
  const served = useApiServer({
    HOURGLASS_API_TOKENS: "acme:token-acme-0123456789,globex:token-globex-0123456789",
  });

  it("hands out a key no other tenant can derive from anything public", async () => {
    const secretOf = async (token: string) =>
      (await served.api.call("GET", "/v1/webhook-secret", undefined, { authorization: `Bearer ${token}` }))
        .json.secret as string;
    const globex = await secretOf("token-globex-0123456789");
    // acme knows its own name, globex's name and the source code: that must not be enough.
    expect(globex).not.toBe(deriveTenantSecret(OLD_CONSTANT_MASTER, "globex", 0));
    expect(await secretOf("token-acme-0123456789")).not.toBe(
      deriveTenantSecret(OLD_CONSTANT_MASTER, "acme", 0),
    );
  });
});

describe("the local master secret", () => {
  it("is random per data dir, kept owner-only in it, and the same after a restart", () => {
    const dir = freshDir();
    const first = localSecret(dir);
    expect(first).toBeDefined();
    expect(first).not.toBe(OLD_CONSTANT_MASTER);
    expect(first!.length).toBeGreaterThanOrEqual(32);
    const file = join(dir, WEBHOOK_SECRET_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8").trim()).toBe(first);
    expect(localSecret(dir)).toBe(first); // a restart: same master, so every tenant keeps its key
    expect(localSecret(freshDir())).not.toBe(first);
  });

  it("is not made when HOURGLASS_WEBHOOK_SECRET is set, which wins", () => {
    const dir = freshDir();
    expect(localSecret(dir, { HOURGLASS_WEBHOOK_SECRET: "an-explicit-secret-of-length" })).toBe(
      "an-explicit-secret-of-length",
    );
    expect(existsSync(join(dir, WEBHOOK_SECRET_FILE))).toBe(false);
  });

  it("is the same in every process of a deployment, even when they all start at once", async () => {
    const dir = freshDir();
    const script = `import { loadConfig } from "./shared/config.ts";
process.stdout.write(loadConfig({}, { HOURGLASS_MODE: "local", HOURGLASS_DATA_DIR: ${JSON.stringify(dir)} }).webhook.secret);`;
    const run = () =>
      promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: process.cwd(),
      }).then((out) => out.stdout);
    const secrets = await Promise.all(Array.from({ length: 6 }, run));
    expect(new Set(secrets).size).toBe(1);
    expect(secrets[0]).toBe(localSecret(dir));
  });

  it("refuses a secret file other users can read, naming it, instead of signing with a leaked key", () => {
    const dir = freshDir();
    localSecret(dir);
    const file = join(dir, WEBHOOK_SECRET_FILE);
    chmodSync(file, 0o644);
    expect(() => localSecret(dir)).toThrow(ConfigError);
    expect(() => localSecret(dir)).toThrow(/HOURGLASS_WEBHOOK_SECRET.*webhook-secret.*chmod 600/);
    chmodSync(file, 0o600);
    writeFileSync(file, "short\n", { mode: 0o600 });
    expect(() => localSecret(dir)).toThrow(/fewer than 32 characters/);
  });
});
