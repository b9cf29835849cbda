import { IncomingMessage } from "node:http";
import type { Context, MiddlewareHandler, Next } from "hono";
import { problem, sendProblem } from "./problem.ts";

/**
 * How deep a JSON body may nest. Deeper values are refused before any code walks them: the
 * payload's fingerprint, JSON.stringify and validators recurse, and 20,000 levels overflow the
 * stack (which used to surface as a 503, and the client retried it).
 */
export const MAX_JSON_DEPTH = 64;

/**
 * An oversized body is read to its end and thrown away before the 413 is sent, up to this many
 * bytes (or four times the limit, if more). Answering while the client is still sending makes the
 * server close a connection with unread data on it: Node's fetch then reports a socket error
 * instead of the 413, and the next request on that pooled connection fails too. Past this, the
 * 413 goes out with `Connection: close`: that client is not worth reading.
 */
export const DRAIN_LIMIT_BYTES = 16 * 1_048_576;

/**
 * Guards every request body before a route sees it: too large → 413, not JSON → 415, malformed
 * JSON → 400, nested deeper than MAX_JSON_DEPTH → 422. Routes then validate the parsed value
 * against their schema (→ 422).
 */
export function jsonBodies(maxBytes: number): MiddlewareHandler[] {
  const drainLimit = Math.max(DRAIN_LIMIT_BYTES, 4 * maxBytes);
  const tooLarge = (c: Context, close: boolean) => {
    if (close) c.header("connection", "close");
    return sendProblem(
      c,
      problem("too-large", "The request body is too large", 413, { detail: `at most ${maxBytes} bytes` }),
    );
  };
  const limit: MiddlewareHandler = async (c, next) => {
    if (c.req.method === "GET" || c.req.method === "HEAD") return next();
    const incoming = nodeIncoming(c);
    if (incoming) return readIncoming(c, incoming, next);
    const body = c.req.raw.body;
    if (!body) return next();
    if (Number(c.req.header("content-length") ?? 0) > drainLimit) {
      await body.cancel().catch(() => {});
      return tooLarge(c, true);
    }
    // Read it all, keeping at most `maxBytes`: a declared length can be absent (chunked) or wrong.
    const reader = body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > drainLimit) {
        await reader.cancel().catch(() => {});
        return tooLarge(c, true);
      }
      if (size <= maxBytes) chunks.push(value);
    }
    if (size > maxBytes) return tooLarge(c, false);
    c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks) });
    return next();
  };
  /**
   * The same limits, read from Node's request stream itself (`npm start`, @hono/node-server). The
   * web `Request` the other path reads is built from that stream on first use (a web stream over
   * it, an AbortController, a copy of the headers), then built again around the buffered body:
   * about a fifth of the server's CPU per request for a small hold (issue 33, finding 8). Here the
   * body goes to Hono's body cache, which `c.req.text()`, `json()` and the validators read.
   */
  const readIncoming = async (c: Context, incoming: IncomingMessage, next: Next) => {
    if (Number(c.req.header("content-length") ?? 0) > drainLimit) {
      incoming.destroy();
      return tooLarge(c, true);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of incoming as AsyncIterable<Buffer>) {
      size += chunk.byteLength;
      if (size > drainLimit) {
        incoming.destroy();
        return tooLarge(c, true);
      }
      if (size <= maxBytes) chunks.push(chunk);
    }
    if (size > maxBytes) return tooLarge(c, false);
    // Hono keeps the body's promise there (its `cachedBody`), though the field is typed as the value.
    c.req.bodyCache.text = Promise.resolve(Buffer.concat(chunks).toString("utf8")) as unknown as string;
    return next();
  };
  const parse: MiddlewareHandler = async (c, next) => {
    if (!["POST", "PUT", "PATCH"].includes(c.req.method)) return next();
    const text = await c.req.text();
    if (text.length === 0) return next();
    const type = c.req.header("content-type") ?? "";
    if (!/^application\/([\w.+-]+\+)?json\b/i.test(type)) {
      return sendProblem(
        c,
        problem("unsupported-media-type", "Send JSON", 415, {
          detail: "content-type must be application/json",
        }),
      );
    }
    let value: unknown;
    try {
      // JSON.parse itself does not recurse, so it takes any depth; what comes after does.
      value = JSON.parse(text);
    } catch (error) {
      return sendProblem(
        c,
        problem("malformed-json", "The body is not valid JSON", 400, { detail: (error as Error).message }),
      );
    }
    const deep = tooDeep(value, MAX_JSON_DEPTH);
    if (deep !== undefined) {
      const message = `nested more than ${MAX_JSON_DEPTH} levels deep`;
      return sendProblem(
        c,
        problem("validation", "The request breaks a rule", 422, {
          detail: `${deep || "(body)"}: ${message}`,
          errors: [{ path: deep, message }],
        }),
      );
    }
    return next();
  };
  return [limit, parse];
}

/**
 * Node's request behind the lightweight `Request` @hono/node-server hands Hono, while nothing has
 * read it yet; undefined elsewhere (Lambda) and once the web `Request` was built from it.
 */
function nodeIncoming(c: Context): IncomingMessage | undefined {
  const incoming: unknown = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return incoming instanceof IncomingMessage && !incoming.readableDidRead ? incoming : undefined;
}

/**
 * The path (its first few steps, in the API's `a.b[0]` style) of the first value nested deeper
 * than `max`, or undefined. Iterative, so it cannot overflow the stack it protects.
 */
export function tooDeep(value: unknown, max: number): string | undefined {
  const stack: { value: unknown; depth: number; path: string }[] = [{ value, depth: 0, path: "" }];
  while (stack.length > 0) {
    const { value: current, depth, path } = stack.pop()!;
    if (current === null || typeof current !== "object") continue;
    if (depth >= max) return path;
    // Past a few steps the path is noise; the first ones say where the deep value is.
    const step = (key: string) => (depth < 3 ? `${path}${key}` : path.endsWith("…") ? path : `${path}…`);
    if (Array.isArray(current)) {
      current.forEach((item, i) => {
        stack.push({ value: item, depth: depth + 1, path: step(`[${i}]`) });
      });
    } else {
      for (const [key, item] of Object.entries(current)) {
        stack.push({ value: item, depth: depth + 1, path: step(path ? `.${key}` : key) });
      }
    }
  }
  return undefined;
}
