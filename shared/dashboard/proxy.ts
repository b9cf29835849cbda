import { Hono } from "hono";
import { mountDashboardPage } from "./routes.ts";

export interface ProxyOptions {
  /** The API's base URL, stage path included (such as https://abc.execute-api.eu-west-1.amazonaws.com/api). */
  readonly target: string;
  /** The local origin the page is served from, such as http://127.0.0.1:4000. */
  readonly origin: string;
  readonly token?: string;
  /** Signs a request for API Gateway's IAM authorization (the client's SigV4 signer). */
  readonly sign?: (request: Request) => Promise<Request>;
}

/** Request and response headers worth passing along; everything else stays on its side. */
const FORWARD_REQUEST = ["accept", "content-type", "if-match"];
const FORWARD_RESPONSE = ["content-type", "etag", "retry-after", "www-authenticate"];

/**
 * The dashboard for a deployment: the same page, served on loopback, and its API calls forwarded
 * to the deployment with the user's own credentials. Only the page itself may use it: requests
 * from another origin (another site open in the browser) or for another host name (DNS
 * rebinding) are refused, since whatever reaches this proxy is signed as the user.
 */
export function dashboardProxy(options: ProxyOptions): Hono {
  const app = new Hono();
  const base = options.target.replace(/\/+$/, "");
  const host = new URL(options.origin).host;
  app.use("*", async (c, next) => {
    const origin = c.req.header("origin");
    const site = c.req.header("sec-fetch-site");
    if (
      c.req.header("host") !== host ||
      (origin && origin !== options.origin) ||
      (site && site !== "same-origin" && site !== "none")
    )
      return c.text("forbidden: this proxy only serves its own page", 403);
    return next();
  });
  mountDashboardPage(app);
  const forward = async (c: { req: { raw: Request } }) => {
    const incoming = new URL(c.req.raw.url);
    const headers = new Headers();
    for (const name of FORWARD_REQUEST) {
      const value = c.req.raw.headers.get(name);
      if (value) headers.set(name, value);
    }
    if (options.token) headers.set("authorization", `Bearer ${options.token}`);
    const method = c.req.raw.method;
    const body = method === "GET" || method === "HEAD" ? undefined : await c.req.raw.text();
    let request = new Request(`${base}${incoming.pathname}${incoming.search}`, { method, headers, body });
    if (options.sign) request = await options.sign(request);
    let response: Response;
    try {
      response = await fetch(request);
    } catch (error) {
      return problem(502, "The deployment does not answer", String(error));
    }
    const out = new Headers();
    for (const name of FORWARD_RESPONSE) {
      const value = response.headers.get(name);
      if (value) out.set(name, value);
    }
    return new Response(await response.arrayBuffer(), { status: response.status, headers: out });
  };
  app.all("/v1/*", forward);
  app.get("/openapi.json", forward);
  return app;
}

function problem(status: number, title: string, detail: string): Response {
  return new Response(JSON.stringify({ type: "about:blank", title, status, detail }), {
    status,
    headers: { "content-type": "application/problem+json" },
  });
}
