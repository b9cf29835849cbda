import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { costDocument, DOC_PATH, REGENERATE } from "../../scripts/cost/markdown.ts";
import { lambdaMeasurement } from "../../scripts/cost/measured.ts";

// Two synths (lean and standard) and every figure of the document recomputed from them.
it("docs/cost.md is what the cost tool computes from today's templates", () => {
  const computed = costDocument(lambdaMeasurement());
  const committed = readFileSync(DOC_PATH, "utf8");
  expect(committed, `docs/cost.md disagrees with the cost tool: run \`${REGENERATE}\``).toBe(computed);
}, 240_000);
