#!/usr/bin/env node
// The `hourglass` command. It runs the CLI prebuilt by esbuild (dist/cli, see build-cli.mjs),
// which starts several times faster than compiling the TypeScript at every start. A bundle that
// is missing, or older than a source it was built from (a pull, an edit), is rebuilt first, so it
// never runs stale code; where esbuild is not installed either, the sources run through tsx,
// slower, and it says so.
import { pathToFileURL } from "node:url";
import { BUNDLE, buildCli, isFresh } from "./build-cli.mjs";

let program = pathToFileURL(BUNDLE).href;
if (!isFresh()) {
  try {
    await buildCli();
  } catch (error) {
    process.stderr.write(
      `[hourglass] the prebuilt CLI is missing or stale and could not be built (${error.message}); ` +
        "running from source through tsx, which is slower. `npm run build:cli` builds it.\n",
    );
    const { register } = await import("tsx/esm/api");
    register();
    program = new URL("../shared/cli/program.ts", import.meta.url).href;
  }
}
const { main } = await import(program);
await main(process.argv);
