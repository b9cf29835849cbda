import { describe } from "vitest";
import { awsShapedScenario } from "../support/aws-shaped-scenario.ts";

// The synthesized standard-profile stack, its bundles run as Lambda runs them (docs/local.md, "AWS-shaped mode").
describe("AWS-shaped run, standard profile", () => awsShapedScenario("standard"));
