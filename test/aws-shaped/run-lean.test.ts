import { describe } from "vitest";
import { awsShapedScenario } from "../support/aws-shaped-scenario.ts";

// The synthesized lean-profile stack, its bundles run as Lambda runs them (docs/local.md, "AWS-shaped mode").
describe("AWS-shaped run, lean profile", () => awsShapedScenario("lean"));
