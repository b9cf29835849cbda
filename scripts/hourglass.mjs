#!/usr/bin/env node
// The `hourglass` command. It runs the TypeScript sources through tsx, resolved from this package,
// so it works from any directory once the package is installed (or via `npx hourglass` here).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../shared/cli/program.ts");
await main(process.argv);
