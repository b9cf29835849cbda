import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { type AddressPolicy, refusalFor } from "./address-guard.ts";
import { NonRetryableError } from "./errors.ts";

/**
 * Set by the CDK construct on every function: `false` when the deployment has no route to the
 * internet (`egress: "none"`). Unset (local mode, your own runtime) means the internet is reachable.
 */
export const EGRESS_VARIABLE = "HOURGLASS_INTERNET_EGRESS";

/** A webhook target needs the internet and the deployment has none: retrying cannot help. */
export class NoInternetEgressError extends NonRetryableError {
  constructor(readonly host: string) {
    super(
      `this deployment has no internet egress, so ${host} cannot be reached; deploy with an egress (docs/deploy.md) or use a target inside the VPC`,
    );
    this.name = "NoInternetEgressError";
  }
}

export function hasInternetEgress(env: Record<string, string | undefined> = process.env): boolean {
  return env[EGRESS_VARIABLE] !== "false";
}

/**
 * Fails at once, instead of after the webhook timeout, when the target needs the internet and the
 * deployment has no egress. Without private targets allowed every reachable target is on the
 * internet; with them allowed, a host whose addresses are all private (inside the VPC) may go on.
 * A name that does not resolve is left to the request, which reports the DNS error itself.
 */
/** Only public addresses pass: what a private (in-VPC) target is told apart from. */
const PUBLIC_ONLY: AddressPolicy = { allowPrivate: false, allowLoopback: false, refusedPorts: new Set() };

export async function requireEgressFor(
  url: URL,
  policy: Pick<AddressPolicy, "allowPrivate">,
  env: Record<string, string | undefined> = process.env,
): Promise<void> {
  if (hasInternetEgress(env)) return;
  if (!policy.allowPrivate) throw new NoInternetEgressError(url.hostname);
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    try {
      addresses = (await lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return;
    }
  }
  if (addresses.some((address) => refusalFor(address, PUBLIC_ONLY) === undefined)) {
    throw new NoInternetEgressError(url.hostname);
  }
}
