#!/usr/bin/env node
// Makes a fresh clone runnable: installs npm dependencies when they are missing or stale, and the
// system packages the embedded stack needs when this user can (root with apt-get). Node builtins
// only, since it runs before node_modules exists.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, lstatSync, readFileSync } from "node:fs";

const run = (command, args) => execFileSync(command, args, { stdio: "inherit" });
const has = (command) => !spawnSync(command, ["--version"], { stdio: "ignore" }).error;

// What is installed is compared with the lockfile by version, not by file times: a checkout, a
// `git worktree add` or a copy makes package-lock.json look newer without changing anything.
const locked = JSON.parse(readFileSync("package-lock.json", "utf8")).packages ?? {};
const stale = Object.entries(locked).filter(([path, entry]) => {
  if (!/^node_modules\/(@[^/]+\/)?[^/]+$/.test(path) || entry.link) return false;
  try {
    return JSON.parse(readFileSync(`${path}/package.json`, "utf8")).version !== entry.version;
  } catch {
    return !entry.optional;
  }
});
if (stale.length > 0) {
  // `npm ci` empties node_modules first. When node_modules is a link to a copy shared with other
  // checkouts, that would empty theirs too: say what is missing and leave it to the user.
  if (existsSync("node_modules") && lstatSync("node_modules").isSymbolicLink()) {
    console.error(
      `[hourglass] node_modules is a link to a shared folder and ${stale.length} package(s) there differ from ` +
        `package-lock.json (${stale[0][0]}, …); run npm ci where that folder lives`,
    );
    process.exit(1);
  }
  console.log(`[hourglass] installing npm dependencies (npm ci): ${stale.length} missing or out of date`);
  run("npm", ["ci", "--no-audit", "--no-fund"]);
}

const remote =
  process.env.HOURGLASS_REDIS_URL && !/127\.0\.0\.1|localhost/.test(process.env.HOURGLASS_REDIS_URL);
if (!remote && !has("redis-server")) {
  if (process.getuid?.() === 0 && has("apt-get")) {
    console.log("[hourglass] installing redis-server with apt-get");
    run("apt-get", ["update", "-qq"]);
    run("apt-get", ["install", "-y", "-qq", "redis-server", "redis-tools"]);
  } else {
    console.error(
      "[hourglass] redis-server is missing: install it (apt-get install redis-server) or set HOURGLASS_REDIS_URL",
    );
    process.exit(1);
  }
}

if (!process.env.AWS_ENDPOINT_URL_DYNAMODB && spawnSync("java", ["-version"], { stdio: "ignore" }).error) {
  console.error(
    "[hourglass] java is missing: DynamoDB Local needs Java 17 or newer (apt-get install openjdk-17-jre-headless), " +
      "or set AWS_ENDPOINT_URL_DYNAMODB to a DynamoDB you run",
  );
  process.exit(1);
}

// The CLI's bundle (scripts/build-cli.mjs): built here once, rather than by the first of the
// several CLI processes a test run starts at the same time. Missing or stale only.
run("node", ["scripts/build-cli.mjs", "--if-stale"]);
