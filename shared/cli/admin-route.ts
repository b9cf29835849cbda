import ky, { HTTPError, type KyInstance } from "ky";
import { sigV4Signer } from "../client/sigv4.ts";
import type { AdminStatus } from "../http/routes/admin.ts";

/** An admin route answered with an error status. */
export class AdminRouteError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly detail: string,
  ) {
    super(`${method} ${path} answered ${status}: ${detail}`);
    this.name = "AdminRouteError";
  }

  /** The caller is not one of the deployment's admins (or has no admin token). */
  get forbidden(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/** `GET /v1/admin/status`, `POST /v1/admin/pause|resume`: the deployment-wide dispatch switch. */
export interface AdminRoute {
  status(): Promise<AdminStatus>;
  setPaused(paused: boolean): Promise<AdminStatus>;
}

export interface AdminRouteOptions {
  /** A local admin token (HOURGLASS_ADMIN_TOKENS). */
  readonly token?: string | undefined;
  /** Sign with SigV4 for API Gateway's IAM authorization, in this region. */
  readonly sigv4Region?: string | undefined;
  /** Retries on 408, 429 and 5xx, as the API client does. @default 3 */
  readonly retries?: number;
}

/**
 * The admin routes of the API at `url`: locally with the admin token, on AWS signed with SigV4 by
 * the client's own signer (the caller's IAM principal is what the routes admit). Both routes are
 * idempotent, so retrying them, as the API client retries, is safe.
 */
export function adminRoute(url: string, options: AdminRouteOptions = {}): AdminRoute {
  const sign = options.sigv4Region ? sigV4Signer({ region: options.sigv4Region }) : undefined;
  const http = ky.create({
    prefixUrl: url.replace(/\/+$/, ""),
    timeout: 30_000,
    retry: {
      limit: options.retries ?? 3,
      methods: ["get", "post"],
      statusCodes: [408, 429, 500, 502, 503, 504],
      backoffLimit: 10_000,
      jitter: true,
    },
    headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
    hooks: { beforeRequest: sign ? [(request) => sign(request)] : [] },
  });
  return {
    status: () => call(http, "GET", "v1/admin/status"),
    setPaused: (paused) => call(http, "POST", `v1/admin/${paused ? "pause" : "resume"}`),
  };
}

/** An answer with an error status becomes AdminRouteError; no answer at all stays fetch's or ky's error. */
async function call(http: KyInstance, method: "GET" | "POST", path: string): Promise<AdminStatus> {
  try {
    return await http(path, { method }).json<AdminStatus>();
  } catch (error) {
    if (!(error instanceof HTTPError)) throw error;
    const text = await error.response.text().catch(() => "");
    throw new AdminRouteError(method, `/${path}`, error.response.status, problemText(text));
  }
}

/** A problem document's title and detail; the body itself when it is not one. */
function problemText(text: string): string {
  try {
    const problem = JSON.parse(text) as { title?: string; detail?: string; message?: string };
    // API Gateway's own refusals (a missing or wrong signature) are `{ "message": … }`.
    return [problem.title, problem.detail, problem.message].filter(Boolean).join(": ") || text;
  } catch {
    return text;
  }
}

/** `GET /v1/admin/status` as the caller could read it; not being an admin is an answer, not a failure. */
export type AdminView =
  | ({ readonly reachable: true } & AdminStatus)
  | { readonly reachable: false; readonly forbidden: boolean; readonly reason: string };

export async function adminView(route: AdminRoute): Promise<AdminView> {
  try {
    return { reachable: true, ...(await route.status()) };
  } catch (error) {
    return {
      reachable: false,
      forbidden: error instanceof AdminRouteError && error.forbidden,
      reason: reasonOf(error),
    };
  }
}

/** What went wrong, in one line: the route's answer, or why nothing answered. */
function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  if (cause?.code) return `no answer (${cause.code})`;
  return error instanceof Error ? error.message : String(error);
}

/** One half of a pause or resume: what it did, or why it did not. */
export type Half<T> =
  | { readonly ok: true; readonly result: T }
  | { readonly ok: false; readonly attempted: boolean; readonly forbidden: boolean; readonly error: string };

export interface PauseResult {
  readonly stack: string;
  readonly paused: boolean;
  /** The Redis pause key, through the admin route: every path (dispatcher, direct sends, retries) checks it. */
  readonly pauseKey: Half<AdminStatus>;
  /** The dispatcher's EventBridge Scheduler schedule. */
  readonly schedule: Half<{ schedule: string; before: string; after: string }>;
  /** Both halves took effect. */
  readonly complete: boolean;
}

export const failedHalf = (error: unknown): Half<never> => ({
  ok: false,
  attempted: true,
  forbidden: error instanceof AdminRouteError && error.forbidden,
  error: reasonOf(error),
});

export const NOT_ADMIN =
  "this caller is not one of the deployment's admins: name its role in the construct's admins (-c admins=ARN)";

/** What took effect and what did not, for a person. */
export function pauseReport(r: PauseResult): string {
  const key = r.pauseKey;
  const sched = r.schedule;
  const why = (half: { error: string; forbidden: boolean }) =>
    half.forbidden ? `${half.error}; ${NOT_ADMIN}` : half.error;
  const scheduleText = sched.ok
    ? sched.result.before === sched.result.after
      ? `${sched.result.schedule} was already ${sched.result.after}`
      : `${sched.result.schedule}: ${sched.result.before} → ${sched.result.after}`
    : "";
  if (r.complete) {
    return r.paused
      ? `dispatch paused on every path: Redis pause key set${key.ok && key.result.pausedSince ? ` (since ${key.result.pausedSince})` : ""}; ${scheduleText}`
      : `dispatch resumed on every path: ${scheduleText}; Redis pause key cleared`;
  }
  if (r.paused) {
    if (sched.ok)
      return `PARTLY PAUSED: ${scheduleText}, but the Redis pause key is NOT set (${why(key as { error: string; forbidden: boolean })}): direct sends from the API and the worker's own retries still run`;
    if (key.ok)
      return `PAUSED on every path (the Redis pause key is set), but the schedule is still enabled (${why(sched)}): the dispatcher keeps running each minute and claims nothing`;
    return `NOT PAUSED: the Redis pause key is not set (${why(key)}) and the schedule is unchanged (${why(sched)})`;
  }
  if (!sched.ok)
    return `NOT RESUMED: the schedule could not be enabled (${why(sched)}); the Redis pause key was left set, so nothing dispatches`;
  return `NOT RESUMED: ${scheduleText}, but the Redis pause key is still set (${why(key as { error: string; forbidden: boolean })}): the dispatcher runs and claims nothing, and no path sends. Run resume again once the admin route answers`;
}

export function adminRows(a: AdminView): Record<string, string>[] {
  if (!a.reachable)
    return [{ "pause key": `unknown: ${a.forbidden ? `${a.reason}; ${NOT_ADMIN}` : a.reason}` }];
  return [
    {
      "pause key": a.paused ? `PAUSED${a.pausedSince ? ` since ${a.pausedSince}` : ""}` : "not set (running)",
    },
    { "index size": String(a.indexSize) },
    { "oldest overdue (index)": `${a.oldestOverdueMs} ms` },
  ];
}
