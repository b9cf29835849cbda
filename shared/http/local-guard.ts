import type { MiddlewareHandler } from "hono";
import { problem, sendProblem } from "./problem.ts";

/**
 * The local API listens on loopback, and without HOURGLASS_API_TOKENS it asks for no credentials.
 * Loopback alone does not keep a browser out: a page on any site can send requests to
 * 127.0.0.1, or rebind its own DNS name to 127.0.0.1 and read the answers. So:
 * - a request whose `Host` is not a loopback name or one configured in HOURGLASS_ALLOWED_HOSTS is
 *   refused (DNS rebinding: the attacker's name is in `Host`);
 * - a state-changing request whose `Origin` is not this server's own origin is refused (a form or
 *   fetch from another site; browsers always send Origin on those). The port counts: another
 *   program's page on `http://127.0.0.1:5173` is another origin, as browsers see it, and no more
 *   trusted than any site. Command-line clients send no Origin.
 * On AWS, API Gateway fronts the function and IAM authorizes every call, so this is local only.
 */
export function localRequestGuard(allowedHosts: readonly string[]): MiddlewareHandler {
  const extra = new Set(allowedHosts.map((h) => h.toLowerCase()));
  const allowed = (host: string) => {
    const name = hostnameOf(host);
    return name !== undefined && (isLoopbackName(name) || extra.has(name));
  };
  return async (c, next) => {
    // Behind API Gateway (a Lambda proxy event), IAM authorizes every call: nothing to guard.
    if ((c.env as { event?: { requestContext?: unknown } } | undefined)?.event?.requestContext) return next();
    const host = c.req.header("host") ?? new URL(c.req.url).host;
    if (!allowed(host)) {
      return sendProblem(
        c,
        problem("forbidden-host", "This host name is not served", 403, {
          detail: "the local API answers loopback names only; add others to HOURGLASS_ALLOWED_HOSTS",
        }),
      );
    }
    const origin = c.req.header("origin");
    if (
      origin !== undefined &&
      !["GET", "HEAD", "OPTIONS"].includes(c.req.method) &&
      !sameOrigin(origin, host)
    ) {
      return sendProblem(
        c,
        problem("cross-site", "Cross-site requests are refused", 403, {
          detail: "a state-changing request came from a page of another origin",
        }),
      );
    }
    return next();
  };
}

/**
 * True when `origin` is the origin the request was sent to: the same host and port as `Host`
 * (a default port written out or left implicit compares equal). `null` and unparsable origins are
 * never the same.
 */
function sameOrigin(origin: string, host: string): boolean {
  try {
    const from = new URL(origin);
    if (from.protocol !== "http:" && from.protocol !== "https:") return false;
    return from.host === new URL(`${from.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

/** `example.com:3000` → `example.com`, `[::1]:3000` → `::1`. */
function hostnameOf(host: string): string | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:]+))(?::\d+)?$/.exec(host.trim().toLowerCase());
  return match ? (match[1] ?? match[2]) : undefined;
}

function isLoopbackName(name: string): boolean {
  return (
    name === "localhost" ||
    name.endsWith(".localhost") ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) ||
    name === "::1"
  );
}

/** What `npm start` says about who can call the local API, so nobody mistakes it for protected. */
export function accessNotice(config: { apiTokens: ReadonlyMap<string, string>; port: number }): string {
  if (config.apiTokens.size === 0)
    return (
      `The API is UNAUTHENTICATED and bound to loopback (127.0.0.1:${config.port}) only: any process on this ` +
      "machine can call it, as one default tenant. Browsers are held off by Host and Origin checks. Set " +
      "HOURGLASS_API_TOKENS to require bearer tokens (one tenant per token)."
    );
  return (
    `The API requires a bearer token (${config.apiTokens.size} configured) and is bound to loopback ` +
    `(127.0.0.1:${config.port}) only; private webhook targets are off unless HOURGLASS_WEBHOOK_ALLOW_PRIVATE=true.`
  );
}
