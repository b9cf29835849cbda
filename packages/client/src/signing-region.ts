/**
 * The region a SigV4 signature for an API is scoped to. API Gateway verifies the signature in the
 * API's own region, so a URL that names it (`<id>.execute-api.<region>.amazonaws.com`, or a private
 * API's `…execute-api.<region>.vpce.amazonaws.com`) decides over the environment, which may name
 * another region for the caller's other work. Otherwise the standard chain, as the AWS SDK and CLI
 * read it: AWS_REGION, AWS_DEFAULT_REGION, then the profile's `region` in the shared config file
 * (AWS_PROFILE, AWS_CONFIG_FILE).
 */
const EXECUTE_API_HOST = /\.execute-api\.([a-z]{2}(?:-[a-z]+)+-\d+)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?$/;

/** No region for signing requests to `url` could be found. */
export class SigningRegionError extends Error {
  constructor(readonly url: string) {
    super(
      `SigV4 signing needs the API's region and none was found for ${url}: pass --region (or ` +
        "{ region }), set AWS_REGION (or AWS_DEFAULT_REGION), or set region in your AWS profile's " +
        "config (AWS_PROFILE, ~/.aws/config)",
    );
    this.name = "SigningRegionError";
  }
}

/** The region in an API Gateway `execute-api` URL; undefined for any other host (a custom domain). */
export function regionOfExecuteApiUrl(url: string): string | undefined {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return undefined;
  }
  return EXECUTE_API_HOST.exec(host)?.[1];
}

/** `explicit` when given; then the URL's region; then the standard chain. */
export async function resolveSigningRegion(url: string, explicit?: string): Promise<string> {
  const region =
    explicit ||
    regionOfExecuteApiUrl(url) ||
    process.env.AWS_REGION ||
    process.env.AWS_DEFAULT_REGION ||
    (await profileRegion());
  if (!region) throw new SigningRegionError(url);
  return region;
}

/**
 * The profile's region, read by the SDK's own loader (a client's region provider), so profiles,
 * `AWS_CONFIG_FILE` and SSO-style config behave exactly as in every other AWS tool. Loaded only
 * when needed: callers with a region or an execute-api URL never pay for it (nor install it).
 */
async function profileRegion(): Promise<string | undefined> {
  // An optional peer of @hourglass/client: without it, only the variables and the URL name a region.
  const sdk = await import("@aws-sdk/client-cloudformation").catch(() => undefined);
  if (!sdk) return undefined;
  const client = new sdk.CloudFormationClient({});
  try {
    return (await client.config.region()) || undefined;
  } catch {
    // "Region is missing": nothing in the chain.
    return undefined;
  } finally {
    client.destroy();
  }
}
