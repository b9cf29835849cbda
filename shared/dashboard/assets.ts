import { fileURLToPath } from "node:url";

export interface DashboardAssets {
  readonly js: Uint8Array;
  readonly css: Uint8Array;
}

const ENTRY = fileURLToPath(new URL("./ui/main.tsx", import.meta.url));

/** esbuild's API, as far as this module uses it. */
interface Esbuild {
  build(options: Record<string, unknown>): Promise<{ outputFiles: { path: string; contents: Uint8Array }[] }>;
}

let built: Promise<DashboardAssets> | undefined;

/**
 * The page's script and styles, bundled by esbuild from `ui/` the first time they are asked for
 * (about a tenth of a second) and kept in memory. Building at start rather than committing the
 * output means the served page can never drift from its source. Where the sources or esbuild are
 * absent (inside a Lambda bundle) this rejects, and the page explains how to open the dashboard.
 */
export function dashboardAssets(): Promise<DashboardAssets> {
  built ??= build().catch((error: unknown) => {
    built = undefined; // a later request may try again
    throw error;
  });
  return built;
}

async function build(): Promise<DashboardAssets> {
  // A computed specifier: a bundler (the Lambda build) must not try to inline esbuild itself.
  const specifier = "esbuild";
  const esbuild = (await import(specifier)) as Esbuild;
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    outdir: "out",
    format: "esm",
    target: "es2022",
    minify: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    legalComments: "none",
    logLevel: "silent",
  });
  const file = (ext: string) => {
    const output = result.outputFiles.find((f) => f.path.endsWith(ext));
    if (!output) throw new Error(`the dashboard build produced no ${ext} file`);
    return output.contents;
  };
  return { js: file(".js"), css: file(".css") };
}
