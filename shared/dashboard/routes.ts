import type { Env, Hono } from "hono";
import { type DashboardAssets, dashboardAssets } from "./assets.ts";
import { dashboardHtml, unavailableHtml } from "./page.ts";

const TYPES = { "app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8" } as const;

/**
 * `/dashboard` and its two assets. The page reads only the public API (`v1/…`), with whatever
 * credentials reach it, so the same routes serve `npm start` and the CLI's signing proxy.
 */
export function mountDashboardPage<E extends Env>(app: Hono<E>): void {
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
    if (!(file in TYPES)) return c.notFound();
    const assets: DashboardAssets = await dashboardAssets();
    const content = file === "app.js" ? assets.js : assets.css;
    return c.body(new Uint8Array(content), 200, {
      "content-type": TYPES[file as keyof typeof TYPES],
      "cache-control": "no-cache",
    });
  });
}
