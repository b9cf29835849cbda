// See client.ts: the package's signing-region rules, for the CLI's messages and the dashboard proxy.
export * from "../../packages/client/src/signing-region.ts";
