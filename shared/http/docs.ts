import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { OpenAPIHono } from "@hono/zod-openapi";
import { secureHeaders } from "hono/secure-headers";
import type { TenantEnv } from "./tenancy.ts";

const SWAGGER_UI_VERSION = "5.35.0";
const ASSETS = { "swagger-ui.css": "text/css", "swagger-ui-bundle.js": "text/javascript" } as const;

/**
 * Where Swagger UI's two assets come from: the installed `swagger-ui-dist` when it is there (local
 * mode, no network needed), otherwise the same pinned version from a CDN (inside a Lambda bundle,
 * which does not carry them).
 */
function localAssetsDir(): string | undefined {
  try {
    return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  } catch {
    return undefined;
  }
}

/**
 * The reference page's "Try it out" sends real requests from the API's own origin, so a page of
 * another site that framed it could click them through (the Origin check passes: the request is
 * same-origin). It may not be framed, and nothing it serves is sniffed as another type. Its script
 * policy is left open: the page runs an inline script and, in a Lambda bundle, loads from a CDN.
 */
const docsHeaders = secureHeaders({
  contentSecurityPolicy: { frameAncestors: ["'none'"] },
  xFrameOptions: "DENY",
  xContentTypeOptions: "nosniff",
  strictTransportSecurity: false,
});

/** `/docs`: a readable reference of the API, rendered by Swagger UI from `/openapi.json`. */
export function mountDocs(app: OpenAPIHono<TenantEnv>): void {
  app.use("/docs", docsHeaders);
  app.use("/docs/*", docsHeaders);
  const local = localAssetsDir();
  const base = local ? "/docs/assets" : `https://cdn.jsdelivr.net/npm/swagger-ui-dist@${SWAGGER_UI_VERSION}`;
  // `/` and `/docs/` are where people look first. The page loads `openapi.json` relative to itself,
  // which is right only at `/docs`. Relative locations keep an API Gateway stage prefix (`/prod/`).
  app.get("/", (c) => c.redirect("docs", 302));
  app.get("/docs/", (c) => c.redirect("../docs", 301));
  app.get("/docs", (c) =>
    c.html(`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Hourglass API reference</title>
  <link rel="stylesheet" href="${base}/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="${base}/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: "openapi.json", dom_id: "#reference", deepLinking: true, tryItOutEnabled: true });
  </script>
</body>
</html>`),
  );
  if (!local) return;
  app.get("/docs/assets/:file", async (c) => {
    const file = c.req.param("file") as keyof typeof ASSETS;
    // Own keys only: `in` also finds `__proto__`, `constructor` and the rest of Object.prototype,
    // and reading those files failed as a 503.
    if (!Object.hasOwn(ASSETS, file)) return c.notFound();
    const content = await readFile(join(local, file));
    return c.body(content, 200, { "content-type": ASSETS[file], "cache-control": "public, max-age=86400" });
  });
}
