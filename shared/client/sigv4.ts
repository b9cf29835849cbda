// See client.ts: the package's SigV4 signer, for the CLI's admin calls and the dashboard proxy.
export * from "../../packages/client/src/sigv4.ts";
