import { defaultProvider } from "@aws-sdk/credential-provider-node";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import { resolveSigningRegion } from "./signing-region.ts";

export interface SigV4Options {
  /** @default the URL's region for an execute-api URL, else AWS_REGION, AWS_DEFAULT_REGION, the profile's (`resolveSigningRegion`) */
  readonly region?: string;
  /** @default "execute-api" (API Gateway IAM authorization) */
  readonly service?: string;
}

/**
 * Signs requests for API Gateway's IAM authorization with the AWS SDK's own signer and the
 * standard credential chain (environment, shared config and SSO, instance and container roles).
 * The region is found per API origin, on the first request to it (`resolveSigningRegion`); a
 * request with no region to be found is refused with a `SigningRegionError`.
 */
export function sigV4Signer(options: SigV4Options = {}) {
  const credentials = defaultProvider();
  const signers = new Map<string, Promise<SignatureV4>>();
  const signerFor = (url: URL): Promise<SignatureV4> => {
    let signer = signers.get(url.origin);
    if (!signer) {
      signer = resolveSigningRegion(url.href, options.region).then(
        (region) =>
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
