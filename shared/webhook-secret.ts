import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The master webhook secret of a local deployment, when HOURGLASS_WEBHOOK_SECRET is not set.
 *
 * Every tenant's signing secret is derived from the master (shared/handlers/signing.ts), so a
 * master anyone can know (a constant in the source) lets any tenant derive every other tenant's
 * `whsec_` key and forge their webhooks. Instead each data dir gets its own random master on
 * first use, readable by its owner only, and kept: a restart signs with the same keys, so
 * receivers keep verifying. Every process of the deployment (the API, the worker processes, a
 * test's children) reads the same file, so they all sign alike.
 */
export const WEBHOOK_SECRET_FILE = "webhook-secret";

/** Bytes of randomness in a generated master secret. */
const SECRET_BYTES = 32;

/** The data dir's master secret could not be read, made or trusted. */
export class LocalWebhookSecretError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = "LocalWebhookSecretError";
  }
}

/** The master secret kept in `dataDir`, made there (mode 0600) if it does not exist yet. */
export function localWebhookSecret(dataDir: string): string {
  const path = join(dataDir, WEBHOOK_SECRET_FILE);
  const existing = readSecret(path);
  if (existing !== undefined) return existing;
  create(dataDir, path);
  const created = readSecret(path);
  if (created === undefined) throw new LocalWebhookSecretError(path, "vanished right after it was created");
  return created;
}

/**
 * Writes a fresh secret to a file of its own, then links it into place: the link fails if another
 * process got there first (two processes of one deployment starting at once), and a reader never
 * sees a half-written file. Whoever loses reads the winner's secret.
 */
function create(dataDir: string, path: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const draft = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  writeFileSync(draft, `${randomBytes(SECRET_BYTES).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
  try {
    linkSync(draft, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new LocalWebhookSecretError(path, `could not be created (${(error as Error).message})`);
    }
  } finally {
    unlinkSync(draft);
  }
}

/** The secret in `path`, or undefined when there is no such file. */
function readSecret(path: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new LocalWebhookSecretError(path, `could not be read (${(error as Error).message})`);
  }
  // Group or world access would hand every tenant's key to every local user. Windows has no
  // such mode bits (Node reports 0666), and its profile folders are private to their user.
  const mode = statSync(path).mode & 0o777;
  if (process.platform !== "win32" && (mode & 0o077) !== 0) {
    throw new LocalWebhookSecretError(
      path,
      `other users may read it (mode ${mode.toString(8).padStart(4, "0")}); run chmod 600 on it`,
    );
  }
  const secret = text.trim();
  if (secret.length < 32) {
    throw new LocalWebhookSecretError(
      path,
      "holds no usable secret (fewer than 32 characters); delete it to make a new one, which changes every tenant's key",
    );
  }
  return secret;
}
