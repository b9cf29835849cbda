import type { SignatureV4 } from "@smithy/signature-v4";
import { resolveSigningRegion } from "./signing-region.js";

export interface SigV4Options {
  /** @default the URL's region for an execute-api URL, else AWS_REGION, AWS_DEFAULT_REGION, the profile's (`resolveSigningRegion`) */
  readonly region?: string;
  /** @default "execute-api" (API Gateway IAM authorization) */
  readonly service?: string;
}

/** The packages SigV4 signing loads, optional peers of `@hourglass/client`. */
export const SIGV4_PACKAGES = [
  "@aws-sdk/credential-provider-node",
  "@smithy/signature-v4",
  "@smithy/hash-node",
] as const;

/** `sigv4` was asked for and the AWS SDK packages it signs with are not installed. */
export class SigV4UnavailableError extends Error {
  constructor(cause: unknown) {
    super(
      `SigV4 signing needs the AWS SDK's signer and credentials: npm install ${SIGV4_PACKAGES.join(" ")}`,
      {
        cause,
      },
    );
    this.name = "SigV4UnavailableError";
  }
}

/**
 * The signer's parts, imported on the first signed request: a client that never signs (a bearer
 * token, a local server) needs none of the AWS SDK installed.
 */
async function signingKit() {
  try {
    const [{ defaultProvider }, { Hash }, { SignatureV4 }] = await Promise.all([
      import("@aws-sdk/credential-provider-node"),
      import("@smithy/hash-node"),
      import("@smithy/signature-v4"),
    ]);
    return { credentials: defaultProvider(), Hash, SignatureV4 };
  } catch (error) {
    throw new SigV4UnavailableError(error);
  }
}

/**
 * Signs requests for API Gateway's IAM authorization with the AWS SDK's own signer and the
 * standard credential chain (environment, shared config and SSO, instance and container roles).
 * The region is found per API origin, on the first request to it (`resolveSigningRegion`); a
 * request with no region to be found is refused with a `SigningRegionError`.
 */
export function sigV4Signer(options: SigV4Options = {}) {
  let kit: ReturnType<typeof signingKit> | undefined;
  const signers = new Map<string, Promise<SignatureV4>>();
  const signerFor = (url: URL): Promise<SignatureV4> => {
    let signer = signers.get(url.origin);
    if (!signer) {
      kit ??= signingKit();
      // A missing package is not kept either: installing it fixes the next request.
      kit.catch(() => {
        kit = undefined;
      });
      signer = Promise.all([kit, resolveSigningRegion(url.href, options.region)]).then(
        ([{ credentials, Hash, SignatureV4 }, region]) =>
          new SignatureV4({
            service: options.service ?? "execute-api",
            region,
            credentials,
            sha256: Hash.bind(null, "sha256"),
          }),
      );
      // A failed look-up is not kept: the next request tries again (the user may have fixed it).
      signer.catch(() => signers.delete(url.origin));
      signers.set(url.origin, signer);
    }
    return signer;
  };
  return async (request: Request): Promise<Request> => {
    const url = new URL(request.url);
    const signer = await signerFor(url);
    const body = request.body ? await request.clone().text() : undefined;
    const headers: Record<string, string> = { host: url.host };
    request.headers.forEach((value, key) => {
      headers[key] = value;
    });
    const signed = await signer.sign({
      method: request.method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      path: url.pathname,
      query: queryOf(url.searchParams),
      headers,
      body,
    });
    const result = new Headers(request.headers);
    for (const [key, value] of Object.entries(signed.headers))
      if (key !== "host") result.set(key, String(value));
    return new Request(request, { headers: result });
  };
}

/**
 * Every value of every key: `?tag=a&tag=b` signs both. (`Object.fromEntries` kept only the last,
 * so the signature covered a different query than was sent, and API Gateway refused it.)
 */
function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? values[0]! : values;
  }
  return query;
}
