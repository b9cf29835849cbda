import { describe, it } from "vitest";
import { runAwsShapedScenario } from "../support/aws-shaped-scenario.ts";

// The synthesized stack of each profile, its bundles run as Lambda runs them (docs/aws-shaped.md).
// Both at once: each mostly waits on the template's cadence (a 120 s look-ahead, a tick a minute),
// so one test worker holds both instead of two holding one each.
describe.concurrent("AWS-shaped run", () => {
  it(
    "standard profile: every path through the bundles, pause --aws on all three, IAM on every call",
    () => runAwsShapedScenario("standard"),
    480_000,
  );
  it(
    "lean profile: every path through the bundles, pause --aws on all three, IAM on every call",
    () => runAwsShapedScenario("lean"),
    480_000,
  );
});
