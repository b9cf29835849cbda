import type { Env, Hono } from "hono";
import { secureHeaders } from "hono/secure-headers";
import { type DashboardAssets, dashboardAssets } from "./assets.ts";
import { dashboardHtml, unavailableHtml } from "./page.ts";

const TYPES = { "app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8" } as const;

/**
 * The page and its assets come from this server only, and the page talks to this server only (the
 * API is relative to it). So the policy allows nothing else: no inline script or style element, no
 * other origin, no framing (clickjacking the replay and cancel buttons). Styles set through the DOM
 * (chart colours, bar widths) are not inline styles in CSP's sense and stay allowed; `data:` images
 * cover the empty favicon. Strict-Transport-Security is left to whoever terminates TLS: on loopback
 * it means nothing, and under API Gateway it is not the page's to set for the whole host.
 */
export const dashboardSecurityHeaders = secureHeaders({
  contentSecurityPolicy: {
    defaultSrc: ["'none'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'"],
    imgSrc: ["'self'", "data:"],
    connectSrc: ["'self'"],
    baseUri: ["'none'"],
    formAction: ["'none'"],
    frameAncestors: ["'none'"],
  },
  xFrameOptions: "DENY",
  xContentTypeOptions: "nosniff",
  referrerPolicy: "no-referrer",
  strictTransportSecurity: false,
});

/**
 * `/dashboard` and its two assets. The page reads only the public API (`v1/…`), with whatever
 * credentials reach it, so the same routes serve `npm start` and the CLI's signing proxy.
 */
export function mountDashboardPage<E extends Env>(app: Hono<E>): void {
  app.use("/dashboard", dashboardSecurityHeaders);
  app.use("/dashboard/*", dashboardSecurityHeaders);
  app.get("/dashboard", async (c) => {
    try {
      await dashboardAssets();
    } catch (error) {
      return c.html(unavailableHtml(error instanceof Error ? error.message : String(error)), 503);
    }
    return c.html(dashboardHtml(), 200, { "cache-control": "no-cache" });
  });
  app.get("/dashboard/assets/:file", async (c) => {
    const file = c.req.param("file");
    // Own keys only: `in` also finds `constructor`, `__proto__` and the rest of Object.prototype,
    // and serving those failed as a 503 (and would have built the bundle for nothing).
    if (!Object.hasOwn(TYPES, file)) return c.notFound();
    const assets: DashboardAssets = await dashboardAssets();
    const content = file === "app.js" ? assets.js : assets.css;
    return c.body(new Uint8Array(content), 200, {
      "content-type": TYPES[file as keyof typeof TYPES],
      "cache-control": "no-cache",
    });
  });
}
