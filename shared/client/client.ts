// The typed client lives in its own package (packages/client, published as @hourglass/client);
// the CLI, the dashboard proxy and the tests use that same code through these paths.
export * from "../../packages/client/src/client.ts";
