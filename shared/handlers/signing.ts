import { createHmac, hkdfSync } from "node:crypto";
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { ConfigError } from "../config.ts";
import { equals, notExists } from "../dynamo/conditions.ts";
import { update } from "../dynamo/expression.ts";
import { onConditionFailed } from "../dynamo/failures.ts";
import { JournalRequiredError } from "../journal/errors.ts";
import { RotationOverlapError } from "./errors.ts";

/**
 * Webhook signing on the Standard Webhooks spec (https://www.standardwebhooks.com), so receivers
 * verify with the `standardwebhooks` package or any of its ports. The signature is that package's
 * (`v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` under the secret's bytes), computed with
 * node:crypto: the package's pure-JS SHA-256 and a base64 decode of the secret on every webhook
 * cost 3 to 5% of a worker's CPU in a burst of webhooks (docs/benchmarks.md). A property test
 * holds it to the package's own `sign` and `verify`.
 *
 * Each tenant has its own secret, so tenant A cannot make a webhook that tenant B's receiver
 * accepts. Secrets are not stored: they are derived with HKDF-SHA256 from the deployment's
 * master secret, the tenant and a generation number. Rotating bumps the generation; the previous
 * generation keeps signing too (the spec allows several space-separated signatures) until its
 * overlap ends, so receivers can switch secrets without dropping a webhook.
 */

/** What a tenant's rotation has reached. Generation 0 needs no stored state. */
export interface SigningState {
  readonly generation: number;
  readonly rotatedAt?: number;
  /** Until then, the previous generation's secret signs too. */
  readonly previousUntil?: number;
  /**
   * Generations before the previous one whose overlap has not ended: a rotation during an overlap
   * does not cut the earlier one short (receivers may still hold only that secret).
   */
  readonly older?: readonly { readonly generation: number; readonly until: number }[];
}

/** Secrets besides the current one that may sign at once: each adds a signature to every webhook. */
export const MAX_OVERLAPPING_SECRETS = 4;

/**
 * The state after a rotation at `now`: one generation more, the one replaced signing until
 * `previousUntil`, and every earlier one still in its overlap kept to its own end. Throws
 * RotationOverlapError when that would make more than MAX_OVERLAPPING_SECRETS earlier secrets.
 */
export function rotated(
  tenant: string,
  current: SigningState,
  previousUntil: number,
  now: number,
): SigningState {
  const live = liveEarlier(current, now);
  if (live.length >= MAX_OVERLAPPING_SECRETS) {
    throw new RotationOverlapError(tenant, live.length, Math.min(...live.map((entry) => entry.until)));
  }
  return {
    generation: current.generation + 1,
    rotatedAt: now,
    previousUntil,
    ...(live.length > 0 && { older: live }),
  };
}

/** The generations before `state.generation` that still sign at `now`, newest first. */
function liveEarlier(state: SigningState, now: number): { generation: number; until: number }[] {
  const previous =
    state.generation > 0 && state.previousUntil !== undefined
      ? [{ generation: state.generation - 1, until: state.previousUntil }]
      : [];
  return [...previous, ...(state.older ?? [])].filter((entry) => now < entry.until);
}

export interface TenantSecrets {
  /** `whsec_` + base64 of 32 bytes: the format `new Webhook(secret)` takes. */
  readonly current: string;
  readonly generation: number;
  readonly rotatedAt?: number;
  /** The previous secret, while it still signs. */
  readonly previous?: { readonly secret: string; readonly expiresAt: number };
  /** Secrets before the previous one, rotated away during an overlap, while they still sign. */
  readonly older?: readonly { readonly secret: string; readonly expiresAt: number }[];
}

const HKDF_SALT = "hourglass/webhook-signing/v1";

/** The tenant's secret of one generation: HKDF-SHA256(master, salt, tenant NUL generation). */
export function deriveTenantSecret(master: string, tenant: string, generation: number): string {
  // A pure function of its arguments, asked for on every webhook: derived once.
  const info = `${tenant}\u0000${generation}`;
  const cached = derived.get(master)?.get(info);
  if (cached) return cached;
  const key = hkdfSync("sha256", master, HKDF_SALT, info, 32);
  const secret = `${SECRET_PREFIX}${Buffer.from(key).toString("base64")}`;
  const ofMaster = derived.get(master) ?? new Map<string, string>();
  if (ofMaster.size >= DERIVED_CACHE_SIZE) ofMaster.clear();
  ofMaster.set(info, secret);
  derived.set(master, ofMaster);
  return secret;
}

/** Derived secrets by master secret, then by tenant and generation. */
const derived = new Map<string, Map<string, string>>();
/** Tenant generations kept per master secret; past it the cache starts again (it is only a cache). */
const DERIVED_CACHE_SIZE = 10_000;

const SECRET_PREFIX = "whsec_";

/**
 * The key bytes of a `whsec_` secret, decoded once per secret. Node's base64 decoder skips what it
 * cannot read, where the package's throws: a secret that does not decode to the same text (or to
 * nothing) is refused here too, so nothing is signed with a key a receiver's library would reject.
 */
function keyBytesOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
    key = Buffer.from(encoded, "base64");
    if (key.length === 0 || key.toString("base64") !== encoded)
      throw new Error("a webhook secret must be `whsec_` and the standard base64 of its key bytes");
    if (keys.size >= DERIVED_CACHE_SIZE) keys.clear();
    keys.set(secret, key);
  }
  return key;
}
const keys = new Map<string, Buffer>();

/** One Standard Webhooks signature: `v1,` and base64(HMAC-SHA256(key, `id.seconds.body`)). */
export function sign(secret: string, id: string, timestamp: Date, body: string): string {
  const seconds = Math.floor(timestamp.getTime() / 1000);
  const mac = createHmac("sha256", keyBytesOf(secret)).update(`${id}.${seconds}.${body}`, "utf8");
  return `v1,${mac.digest("base64")}`;
}

export function tenantSecrets(
  master: string,
  tenant: string,
  state: SigningState,
  now: number,
): TenantSecrets {
  const previousLive = state.generation > 0 && state.previousUntil !== undefined && now < state.previousUntil;
  const older = (state.older ?? [])
    .filter((entry) => now < entry.until)
    .map((entry) => ({
      secret: deriveTenantSecret(master, tenant, entry.generation),
      expiresAt: entry.until,
    }));
  return {
    current: deriveTenantSecret(master, tenant, state.generation),
    generation: state.generation,
    ...(state.rotatedAt !== undefined && { rotatedAt: state.rotatedAt }),
    ...(previousLive && {
      previous: {
        secret: deriveTenantSecret(master, tenant, state.generation - 1),
        expiresAt: state.previousUntil!,
      },
    }),
    ...(older.length > 0 && { older }),
  };
}

/**
 * The three Standard Webhooks headers. `webhook-id` is the event id, the same on every attempt,
 * so receivers deduplicate on it; id, timestamp and body are all under the signature.
 */
export function signatureHeaders(
  secrets: TenantSecrets,
  id: string,
  timestamp: Date,
  body: string,
): { "webhook-id": string; "webhook-timestamp": string; "webhook-signature": string } {
  const secretsInUse = [
    secrets.current,
    ...(secrets.previous ? [secrets.previous.secret] : []),
    ...(secrets.older ?? []).map((entry) => entry.secret),
  ];
  return {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
    "webhook-signature": secretsInUse.map((secret) => sign(secret, id, timestamp, body)).join(" "),
  };
}

/** Where rotation state lives. */
export interface SigningStateStore {
  get(tenant: string): Promise<SigningState>;
  /** Bumps the generation; the previous one keeps signing until `previousUntil`. */
  rotate(tenant: string, previousUntil: number, now: number): Promise<SigningState>;
}

/**
 * Rotation state in the leases table (a small key-value table every deployment has), one item
 * per tenant under `webhook-secret#<tenant>`, a prefix no lease key uses (`lease#…`).
 */
export class DynamoSigningStateStore implements SigningStateStore {
  private readonly doc: DynamoDBDocumentClient;

  constructor(
    client: DynamoDBClient,
    private readonly table: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
  }

  async get(tenant: string): Promise<SigningState> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.table, Key: { pk: keyOf(tenant) }, ConsistentRead: true }),
    );
    return Item ? stateOf(Item) : { generation: 0 };
  }

  /**
   * Read, then write only if no other rotation came between (the generation is unchanged), so
   * two rotations at once never lose the earlier secrets either of them kept.
   */
  async rotate(tenant: string, previousUntil: number, now: number): Promise<SigningState> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.get(tenant);
      const next = rotated(tenant, current, previousUntil, now);
      const write = this.doc.send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk: keyOf(tenant) },
          ...update({
            set: {
              generation: next.generation,
              rotatedAt: now,
              previousUntil,
              older: next.older?.map((entry) => ({ ...entry })) ?? [],
            },
            if: current.generation === 0 ? notExists("generation") : equals("generation", current.generation),
          }),
        }),
      );
      const written = await onConditionFailed(
        write.then(() => true),
        () => false,
      );
      if (written) return next;
      if (attempt >= ROTATE_ATTEMPTS) throw new Error(`webhook secret of ${tenant}: rotations kept racing`);
    }
  }
}

/** Concurrent rotations of one tenant's secret retried before giving up. */
const ROTATE_ATTEMPTS = 5;

function keyOf(tenant: string): string {
  return `webhook-secret#${tenant}`;
}

function stateOf(item: Record<string, unknown>): SigningState {
  const older = Array.isArray(item.older)
    ? (item.older as { generation?: unknown; until?: unknown }[]).flatMap((entry) =>
        typeof entry.generation === "number" && typeof entry.until === "number"
          ? [{ generation: entry.generation, until: entry.until }]
          : [],
      )
    : [];
  return {
    generation: Number(item.generation ?? 0),
    ...(typeof item.rotatedAt === "number" && { rotatedAt: item.rotatedAt }),
    ...(typeof item.previousUntil === "number" && { previousUntil: item.previousUntil }),
    ...(older.length > 0 && { older }),
  };
}

/**
 * The tenant secrets the worker signs with and the API hands out. The worker caches a tenant's
 * state for `cacheMs`, so a webhook costs no extra read; a rotation is picked up within that
 * time, and the previous secret keeps signing far longer (the overlap is at least a minute).
 */
export class WebhookSigning {
  /** The read in flight or done: a burst of webhooks for one tenant makes one store read, not one each. */
  private readonly cache = new Map<string, { state: Promise<SigningState>; until: number }>();

  constructor(
    private readonly masterSecret: string | undefined,
    private readonly store: SigningStateStore | undefined,
    private readonly clock: () => number = Date.now,
    private readonly cacheMs = 30_000,
  ) {}

  /** Fails, naming the variable, in a process that was given no master secret. */
  private get master(): string {
    if (!this.masterSecret)
      throw new ConfigError(
        "HOURGLASS_WEBHOOK_SECRET",
        "this process has no webhook signing secret (set it, or name its secret in HOURGLASS_SECRET_ARNS)",
      );
    return this.masterSecret;
  }

  /** The caller's secrets, read fresh (for the API). */
  async secretsFor(tenant: string): Promise<TenantSecrets> {
    const state = this.store ? await this.store.get(tenant) : { generation: 0 };
    return tenantSecrets(this.master, tenant, state, this.clock());
  }

  /** The caller's secrets for signing, from a short cache. */
  async signingSecretsFor(tenant: string): Promise<TenantSecrets> {
    const now = this.clock();
    const cached = this.cache.get(tenant);
    if (cached && cached.until > now) return tenantSecrets(this.master, tenant, await cached.state, now);
    const state = this.store ? this.store.get(tenant) : Promise.resolve({ generation: 0 });
    if (this.cache.size > 10_000) this.cache.clear();
    const entry = { state, until: now + this.cacheMs };
    this.cache.set(tenant, entry);
    // A failed read is not kept: the next webhook reads again.
    state.catch(() => {
      if (this.cache.get(tenant) === entry) this.cache.delete(tenant);
    });
    return tenantSecrets(this.master, tenant, await state, now);
  }

  async rotate(tenant: string, overlapMs: number): Promise<TenantSecrets> {
    // Rotation needs durable state; without the journal there is only generation 0.
    if (!this.store) throw new JournalRequiredError("rotating the webhook secret");
    const now = this.clock();
    const state = await this.store.rotate(tenant, now + overlapMs, now);
    this.cache.delete(tenant);
    return tenantSecrets(this.master, tenant, state, now);
  }
}
