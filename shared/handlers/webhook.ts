import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { z } from "zod";
import { DEFAULT_WEBHOOK_REQUESTS_PER_ORIGIN } from "../config.ts";
import { type AddressPolicy, portRefusal, refusalFor } from "./address-guard.ts";
import { requireEgressFor } from "./egress.ts";
import {
  DependencyUnavailableError,
  ForbiddenAddressError,
  NonRetryableError,
  WebhookRequestError,
} from "./errors.ts";
import { defineHandler, type HandlerContext } from "./registry.ts";
import { signatureHeaders, type WebhookSigning } from "./signing.ts";
import { WebhookSlots } from "./webhook-slots.ts";

/**
 * What Node's HTTP client sends, and nothing else: a header name is an RFC 9110 token, a value
 * holds tabs, visible ASCII and Latin-1. A payload breaking either used to be accepted and then
 * fail every attempt (ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR) on its way to the dead letters.
 */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const webhookPayload = z.object({
  url: z
    .string()
    .url()
    .refine((url) => /^https?:\/\//i.test(url), "must be an http or https URL"),
  method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).default("POST"),
  headers: z
    .record(z.string(), z.string())
    .superRefine((headers, ctx) => {
      for (const [name, value] of Object.entries(headers)) {
        if (!HEADER_NAME.test(name))
          ctx.addIssue({
            code: "custom",
            path: [name],
            message: "not a header name (letters, digits and !#$%&'*+-.^_`|~ only)",
          });
        else if (!HEADER_VALUE.test(value))
          ctx.addIssue({
            code: "custom",
            path: [name],
            message: "a header value holds tabs, visible ASCII and Latin-1 only (no CR, LF or NUL)",
          });
      }
    })
    .optional(),
  body: z.unknown().optional(),
});

export type WebhookPayload = z.output<typeof webhookPayload>;

export interface WebhookOptions {
  /** The tenant's signing secrets (current, and the previous one during a rotation's overlap). */
  readonly signing: Pick<WebhookSigning, "signingSecretsFor">;
  readonly policy: AddressPolicy;
  /** One request, from the moment it has one of `slots` to the end of the response. */
  readonly timeoutMs: number;
  /**
   * Requests in flight at once per tenant and origin (`webhook-slots.ts`).
   * @default slots of this handler's own, DEFAULT_WEBHOOK_REQUESTS_PER_ORIGIN per origin
   */
  readonly slots?: WebhookSlots;
}

/** Node's codes for a request it will not build from these headers. */
const UNSENDABLE = new Set(["ERR_INVALID_HTTP_TOKEN", "ERR_INVALID_CHAR", "ERR_HTTP_INVALID_HEADER_VALUE"]);

/** Retried: the receiver may recover. Anything else outside 2xx is final. */
const RETRYABLE_STATUS = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * The built-in `webhook` type. The guard runs inside the socket's DNS lookup, so the address that
 * is checked is the address that is connected to (no DNS-rebinding gap).
 */
export function webhookHandler(options: WebhookOptions) {
  const slots = options.slots ?? new WebhookSlots(DEFAULT_WEBHOOK_REQUESTS_PER_ORIGIN);
  return defineHandler(
    "webhook",
    webhookPayload,
    async (payload, context) => {
      const url = new URL(payload.url);
      await requireEgressFor(url, options.policy);
      const body =
        payload.body === undefined
          ? ""
          : typeof payload.body === "string"
            ? payload.body
            : JSON.stringify(payload.body);
      const byPort = portRefusal(url, options.policy);
      if (byPort) throw new ForbiddenAddressError(url.host, url.port, byPort);
      // A literal IP skips DNS, and with it the guarded lookup, so it is judged here.
      const literal = url.hostname.replace(/^\[|\]$/g, "");
      if (isIP(literal)) {
        const refusal = refusalFor(literal, options.policy);
        if (refusal) throw new ForbiddenAddressError(url.hostname, literal, refusal);
      }
      const secrets = await options.signing.signingSecretsFor(context.tenant).catch((error: unknown) => {
        // The tenant's rotation state lives in DynamoDB: its outage is not this webhook's failure.
        if (error instanceof NonRetryableError) throw error;
        throw new DependencyUnavailableError("the webhook signing state", { cause: error });
      });
      // Waiting for a slot may take what the attempt has beyond the request's own timeout, never
      // the receiver's time; past that the attempt is given back (WebhookSlotsBusyError).
      const waitMs = context.remainingMs() - options.timeoutMs;
      const response = await slots.run(context.tenant, url.origin, waitMs, () =>
        signAndSend(url, payload, body, secrets, context, options),
      );
      if (response.status >= 200 && response.status < 300) return;
      const detail = `webhook answered ${response.status}${response.excerpt ? `: ${response.excerpt}` : ""}`;
      if (RETRYABLE_STATUS(response.status)) throw new Error(detail);
      throw new NonRetryableError(detail);
    },
    // The request's timeout, and as long again to wait for a slot.
    { timeoutMs: 2 * options.timeoutMs },
  );
}

/** Signed when its slot is free, so the timestamp is the send's, not the start of the wait. */
async function signAndSend(
  url: URL,
  payload: WebhookPayload,
  body: string,
  secrets: Awaited<ReturnType<WebhookOptions["signing"]["signingSecretsFor"]>>,
  context: HandlerContext,
  options: WebhookOptions,
): Promise<{ status: number; excerpt: string }> {
  const headers: Record<string, string> = {
    "user-agent": "Hourglass-Webhook/1",
    ...(payload.body !== undefined &&
      typeof payload.body !== "string" && { "content-type": "application/json" }),
    ...withoutReserved(payload.headers),
    // Information only: the signed fields are webhook-id (the same event id) and the body.
    "hourglass-event-id": context.id,
    "hourglass-attempt": String(context.attempt),
    ...signatureHeaders(secrets, context.id, new Date(), body),
  };
  if (body) headers["content-length"] = String(Buffer.byteLength(body));
  const deadline = untilEither(context.signal, options.timeoutMs);
  return send(url, payload.method, headers, body, guardedLookup(options.policy), deadline.signal)
    .catch((error: unknown) => {
      if (error instanceof ForbiddenAddressError) throw error;
      const failed = WebhookRequestError.from(url, error);
      // Node refused to build the request from the payload (payloads stored before their headers
      // were validated): every attempt would fail alike, so it goes to the dead letters now.
      if (UNSENDABLE.has(failed.code)) throw new NonRetryableError(failed.message, { cause: error });
      throw failed;
    })
    .finally(deadline.done);
}

/**
 * A signal that aborts when `signal` does or after `ms`, whichever comes first; `done` stops the
 * timer. Not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: on Node 20 the composite holds
 * its sources weakly, so a garbage collection during the request drops the timeout and a receiver
 * that never answers is waited for as long as it likes (the chaos soak's receivers that answered
 * 200 two seconds past the 5 s timeout were recorded as succeeded; a test forcing GC shows it).
 */
function untilEither(signal: AbortSignal, ms: number): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  // The timer holds the controller, so nothing here can be collected before it fires or stops.
  const timer = setTimeout(
    () => controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError")),
    ms,
  );
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * The caller's headers, minus the ones Hourglass sets: a payload may not forge a signature, an
 * event id or the request framing.
 */
function withoutReserved(headers: Record<string, string> | undefined): Record<string, string> {
  const reserved = /^(webhook-|hourglass-|content-length$|host$|transfer-encoding$|connection$)/i;
  return Object.fromEntries(Object.entries(headers ?? {}).filter(([name]) => !reserved.test(name)));
}

function guardedLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as LookupAddress[];
      for (const { address } of list) {
        const reason = refusalFor(address, policy);
        if (reason) return callback(new ForbiddenAddressError(hostname, address, reason), "", 0);
      }
      if (lookupOptions.all)
        return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      const first = list[0]!;
      callback(null, first.address, first.family);
    });
  };
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string,
  lookup: LookupFunction,
  signal: AbortSignal,
): Promise<{ status: number; excerpt: string }> {
  return new Promise((resolve, reject) => {
    const request = (url.protocol === "https:" ? httpsRequest : httpRequest)(
      url,
      { method, headers, lookup, signal },
      (response: IncomingMessage) => {
        let excerpt = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          if (excerpt.length < 300) excerpt += chunk;
        });
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, excerpt: excerpt.slice(0, 300).trim() }),
        );
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    request.end(body);
  });
}
