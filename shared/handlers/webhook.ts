import { createHmac } from "node:crypto";
import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import { z } from "zod";
import { refusalFor } from "./address-guard.ts";
import { requireEgressFor } from "./egress.ts";
import { ForbiddenAddressError, NonRetryableError } from "./errors.ts";
import { defineHandler } from "./registry.ts";

export const webhookPayload = z.object({
  url: z
    .string()
    .url()
    .refine((url) => /^https?:\/\//i.test(url), "must be an http or https URL"),
  method: z.enum(["GET", "POST", "PUT", "PATCH", "DELETE"]).default("POST"),
  headers: z.record(z.string(), z.string()).optional(),
  body: z.unknown().optional(),
});

export type WebhookPayload = z.output<typeof webhookPayload>;

export interface WebhookOptions {
  readonly secret: string;
  readonly allowPrivate: boolean;
  readonly timeoutMs: number;
}

/** Retried: the receiver may recover. Anything else outside 2xx is final. */
const RETRYABLE_STATUS = (status: number) => status === 408 || status === 429 || status >= 500;

/**
 * `Hourglass-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`. The timestamp inside
 * the MAC lets a receiver refuse replays older than it tolerates.
 */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  const mac = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
  return `t=${timestamp},v1=${mac}`;
}

/**
 * The built-in `webhook` type. The guard runs inside the socket's DNS lookup, so the address that
 * is checked is the address that is connected to (no DNS-rebinding gap).
 */
export function webhookHandler(options: WebhookOptions) {
  return defineHandler(
    "webhook",
    webhookPayload,
    async (payload, context) => {
      const url = new URL(payload.url);
      await requireEgressFor(url, options.allowPrivate);
      const body =
        payload.body === undefined
          ? ""
          : typeof payload.body === "string"
            ? payload.body
            : JSON.stringify(payload.body);
      const timestamp = Math.floor(Date.now() / 1000);
      const headers: Record<string, string> = {
        "user-agent": "Hourglass-Webhook/1",
        ...(payload.body !== undefined &&
          typeof payload.body !== "string" && { "content-type": "application/json" }),
        ...payload.headers,
        "hourglass-event-id": context.id,
        "hourglass-attempt": String(context.attempt),
        "hourglass-signature": signWebhook(options.secret, timestamp, body),
      };
      if (body) headers["content-length"] = String(Buffer.byteLength(body));
      // A literal IP skips DNS, and with it the guarded lookup, so it is judged here.
      const literal = url.hostname.replace(/^\[|\]$/g, "");
      if (isIP(literal)) {
        const refusal = refusalFor(literal, options.allowPrivate);
        if (refusal) throw new ForbiddenAddressError(url.hostname, literal, refusal);
      }
      const signal = AbortSignal.any([context.signal, AbortSignal.timeout(options.timeoutMs)]);
      const response = await send(
        url,
        payload.method,
        headers,
        body,
        guardedLookup(options.allowPrivate),
        signal,
      );
      if (response.status >= 200 && response.status < 300) return;
      const detail = `webhook answered ${response.status}${response.excerpt ? `: ${response.excerpt}` : ""}`;
      if (RETRYABLE_STATUS(response.status)) throw new Error(detail);
      throw new NonRetryableError(detail);
    },
    { timeoutMs: options.timeoutMs },
  );
}

function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) return callback(error, "", 0);
      const list = addresses as LookupAddress[];
      for (const { address } of list) {
        const reason = refusalFor(address, allowPrivate);
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
