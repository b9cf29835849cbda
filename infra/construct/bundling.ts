import * as lambda from "aws-cdk-lib/aws-lambda";
import * as nodejs from "aws-cdk-lib/aws-lambda-nodejs";

/** The Lambda runtime of the three functions: the newest Node.js Lambda offers. */
export const RUNTIME = lambda.Runtime.NODEJS_24_X;

/**
 * esbuild's target for a runtime (`nodejs24.x` → `node24`): the bundle may use whatever that Node
 * runs natively, and nothing newer. Derived, so a runtime change cannot leave the target behind.
 */
export function esbuildTarget(runtime: lambda.Runtime): string {
  const major = /^nodejs(\d+)\.x$/.exec(runtime.name)?.[1];
  if (!major) throw new Error(`${runtime.name} is not a Node.js runtime`);
  return `node${major}`;
}

/**
 * A source map is built beside each bundle, without `sourcesContent` (two thirds of its size, used
 * only to print a source excerpt; file, line and name come from the mappings). Node reads it only
 * with `NODE_OPTIONS=--enable-source-maps`, which the functions do not set: reading the map costs
 * every cold start, and decoding it the first stack trace (docs/deploy.md, "Source maps", has the
 * measurements). The switch, for a function whose traces someone needs:
 * `overrides: { workerFunction: { environment: { NODE_OPTIONS: "--enable-source-maps" } } }`.
 */
export const SOURCE_MAPS = { sourceMap: true, sourcesContent: false } as const;

/**
 * How a function's bundle is built: ESM for the runtime's Node, minified, the Lua scripts copied
 * beside it, and the user's handler module swapped in for `@hourglass/handlers`.
 */
export function functionBundling(handlersModule: string): nodejs.BundlingOptions {
  return {
    format: nodejs.OutputFormat.ESM,
    target: esbuildTarget(RUNTIME),
    sourceMap: SOURCE_MAPS.sourceMap,
    sourcesContent: SOURCE_MAPS.sourcesContent,
    minify: true,
    // The pinned SDK of package-lock.json, the one the tests ran, not whatever the runtime carries.
    bundleAwsSDK: true,
    mainFields: ["module", "main"],
    banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
    esbuildArgs: { "--alias:@hourglass/handlers": handlersModule },
    commandHooks: {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (inputDir: string, outputDir: string) => [
        `cp -r "${inputDir}/shared/engine/lua" "${outputDir}/lua"`,
      ],
    },
  };
}
