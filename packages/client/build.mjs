// Builds dist/ for `npm pack`: one ESM bundle with its two small runtime libraries (ky, ulid)
// inside, so the package installs with no dependencies, and the declarations tsc derives from the
// same sources. The AWS SDK packages SigV4 signs with stay outside: optional peers, loaded on the
// first signed request.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const require = createRequire(import.meta.url);
const { build } = await import("esbuild");

rmSync(`${here}dist`, { recursive: true, force: true });
await build({
  entryPoints: [`${here}src/index.ts`],
  outfile: `${here}dist/index.js`,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: ["@aws-sdk/*", "@smithy/*"],
  legalComments: "inline",
  logLevel: "warning",
});
execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", `${here}tsconfig.build.json`], {
  stdio: "inherit",
});
