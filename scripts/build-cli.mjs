#!/usr/bin/env node
// Bundles the `hourglass` CLI into one ES module with esbuild, so a call starts in a fraction of
// a second instead of compiling TypeScript through tsx at every start. Run by `npm install`
// (prepare), by `npm pack`, by scripts/ensure-install.mjs, and by scripts/hourglass.mjs itself
// when the bundle is missing or older than a source it was built from.
//
// Next to the bundle, inputs.json lists the project's source files it was built from (and the
// lockfile), so the launcher can tell a stale bundle by file times without loading esbuild.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const BUNDLE = join(root, "dist", "cli", "hourglass.mjs");
export const INPUTS = join(root, "dist", "cli", "inputs.json");

/** The bundle exists and no source it was built from changed since. */
export function isFresh() {
  try {
    const built = statSync(BUNDLE).mtimeMs;
    const inputs = JSON.parse(readFileSync(INPUTS, "utf8"));
    // A source that is gone changed nothing by itself (what imported it changed too), and a packed
    // install has no lockfile: only an input that exists and is newer makes the bundle stale.
    return inputs.every(
      (input) => (statSync(join(root, input), { throwIfNoEntry: false })?.mtimeMs ?? 0) <= built,
    );
  } catch {
    return false;
  }
}

/** Builds the bundle unless it is fresh; returns how long the build took, in ms (0: it was fresh). */
export async function ensureCli() {
  return isFresh() ? 0 : buildCli();
}

/** Builds the bundle; returns how long it took, in ms. */
export async function buildCli() {
  const started = performance.now();
  const { build } = await import("esbuild");
  const result = await build({
    entryPoints: [join(root, "shared", "cli", "program.ts")],
    outdir: dirname(BUNDLE),
    entryNames: "hourglass",
    outExtension: { ".js": ".mjs" },
    // What loads only on demand (the --aws clients, the EventBridge import) goes in chunks of its
    // own, imported when used, so its dependencies stay out of every other command's start.
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    absWorkingDir: root,
    write: false,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // Dependencies stay in node_modules, loaded as they are; only this project's TypeScript is compiled.
    // Dependencies are bundled too: resolving and reading the hundreds of files they are made of
    // cost more at start than the TypeScript compile did. CommonJS ones among them require Node's
    // builtins, which an ES module can only do through a require of its own.
    banner: {
      js: 'import { createRequire as __hgRequire } from "node:module"; const require = __hgRequire(import.meta.url);',
    },
    // Except the AWS SDK and Powertools: CommonJS packages loaded on demand (`--aws`, `--sigv4`,
    // `schedules import`), whose named exports only Node's own loader gives a dynamic import
    // (bundled, they sit under `default`). They cost nothing at start.
    external: ["@aws-sdk/*", "@smithy/*", "@aws-lambda-powertools/*"],
    minifySyntax: true,
    metafile: true,
    logLevel: "warning",
  });
  mkdirSync(dirname(BUNDLE), { recursive: true });
  // Written aside and renamed into place: CLI processes starting meanwhile (tests run several at
  // once) read the old bundle or the new one, never half of one.
  const place = (file, contents) => {
    const aside = `${file}.${process.pid}.tmp`;
    writeFileSync(aside, contents);
    renameSync(aside, file);
  };
  // Chunks first (their names carry a hash of their content), the entry last, then inputs.json:
  // the bundle counts as fresh only once all of it is in place.
  const entry = result.outputFiles.find((file) => file.path === BUNDLE);
  for (const file of result.outputFiles) {
    if (file === entry) continue;
    mkdirSync(dirname(file.path), { recursive: true });
    place(file.path, file.contents);
  }
  place(BUNDLE, entry.contents);
  // The project's own sources, and the lockfile for the bundled dependencies (an install that
  // changes one changes it): stat-ing each dependency's files would cost most of a start.
  const sources = Object.keys(result.metafile.inputs).filter((input) => !input.includes("node_modules/"));
  place(INPUTS, `${JSON.stringify([...sources, "package-lock.json"])}\n`);
  // Chunks of earlier builds: nothing refers to them any more.
  const chunks = join(dirname(BUNDLE), "chunks");
  const current = new Set(result.outputFiles.map((file) => file.path));
  for (const name of readdirSync(chunks)) {
    if (!current.has(join(chunks, name))) rmSync(join(chunks, name), { force: true });
  }
  return Math.round(performance.now() - started);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const ms = await (process.argv.includes("--if-stale") ? ensureCli() : buildCli());
  if (ms === 0) process.exit(0);
  console.log(`[hourglass] CLI bundled into ${relative(process.cwd(), BUNDLE)} in ${ms} ms`);
}
