import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// `npm run test:localstack` only (scripts/test-localstack.mjs): never part of `npm test`, whose
// include pattern (test/**/*.test.ts) does not match these files.
export default defineConfig({
  resolve: {
    alias: { "@hourglass/handlers": fileURLToPath(new URL("./functions/handlers.ts", import.meta.url)) },
  },
  test: {
    include: ["test/localstack/**/*.localstack.ts"],
    testTimeout: 600_000,
    hookTimeout: 900_000,
    maxWorkers: 1,
  },
});
