import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { problem, sendProblem } from "./problem.ts";

/**
 * Guards every request body before a route sees it: too large → 413, not JSON → 415, malformed
 * JSON → 400. Routes then validate the parsed value against their schema (→ 422).
 */
export function jsonBodies(maxBytes: number): MiddlewareHandler[] {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: (c) =>
      sendProblem(
        c,
        problem("too-large", "The request body is too large", 413, { detail: `at most ${maxBytes} bytes` }),
      ),
  });
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
    try {
      JSON.parse(text);
    } catch (error) {
      return sendProblem(
        c,
        problem("malformed-json", "The body is not valid JSON", 400, { detail: (error as Error).message }),
      );
    }
    return next();
  };
  return [limit, parse];
}
