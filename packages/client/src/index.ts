/** `@hourglass/client`: a typed client for the Hourglass HTTP API. */
export * from "./client.js";
export { regionOfExecuteApiUrl, resolveSigningRegion, SigningRegionError } from "./signing-region.js";
export { SIGV4_PACKAGES, type SigV4Options, SigV4UnavailableError, sigV4Signer } from "./sigv4.js";
