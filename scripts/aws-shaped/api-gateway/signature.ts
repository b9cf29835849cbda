import { timingSafeEqual } from "node:crypto";
import { Hash } from "@smithy/hash-node";
import {
  ALGORITHM_IDENTIFIER,
  createScope,
  getCanonicalHeaders,
  getPayloadHash,
  getSigningKey,
  SignatureV4,
} from "@smithy/signature-v4";
import { type CallerIdentity, callerIdentity, unmappedCallerArn } from "./caller.ts";
import { GatewayRefusal } from "./errors.ts";
import { invalidSignature, unrecognizedClient } from "./gateway-responses.ts";
import { headerValues, queryPairs, type ReceivedRequest } from "./request.ts";
import type { SignatureClaim } from "./sigv4-claim.ts";
import type { CallerKey } from "./types.ts";

/** The SDK's request and header shapes, named through its own functions rather than a transitive package. */
type HttpRequest = Parameters<typeof getCanonicalHeaders>[0];
type HeaderBag = ReturnType<typeof getCanonicalHeaders>;

const SERVICE = "execute-api";
/** execute-api accepts a signing time this far either side of its clock (see gateway-responses.ts). */
const SKEW_MS = 5 * 60_000;

/**
 * Checks a SigV4 claim as API Gateway's IAM authorization does, in its order: the date, the credential
 * scope, that `host` is signed, that the key is known (and its session token), then the signature,
 * recomputed over the request as received with the AWS SDK's own canonicalization. Returns the caller.
 *
 * Without a key mapping the secret is unknown, so the last step cannot run: any key pair is accepted as
 * the IAM user named after its access key id, once everything before it holds. That keeps
 * `AWS_ACCESS_KEY_ID=dev AWS_SECRET_ACCESS_KEY=anything hourglass --sigv4 …` working while still
 * catching a wrong region, a stale clock or a missing signed header. With a mapping, every mapped
 * key's signature is verified, and unknown keys are refused unless `unknownKeys` accepts them as users
 * (`start:aws` maps only its operator key, and lets any other key pair sign as a user).
 */
export class SignatureVerifier {
  private readonly canonical: CanonicalForm;

  constructor(
    private readonly region: string,
    private readonly accountId: string,
    private readonly keys: ReadonlyMap<string, CallerKey> | undefined,
    private readonly unknownKeys: "refuse" | "accept-as-user" = keys === undefined
      ? "accept-as-user"
      : "refuse",
  ) {
    this.canonical = new CanonicalForm(region);
  }

  async verify(request: ReceivedRequest, claim: SignatureClaim, now: Date): Promise<CallerIdentity> {
    this.checkDate(claim, now);
    this.checkScope(claim);
    if (!claim.signedHeaders.includes("host"))
      throw new GatewayRefusal(
        invalidSignature("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."),
      );
    const key = this.keys?.get(claim.accessKeyId);
    if (!key && this.unknownKeys === "accept-as-user")
      return callerIdentity(claim.accessKeyId, unmappedCallerArn(this.accountId, claim.accessKeyId));
    if (!key || (key.sessionToken !== undefined && key.sessionToken !== claim.sessionToken))
      throw new GatewayRefusal(unrecognizedClient());
    await this.checkSignature(request, claim, key);
    return callerIdentity(claim.accessKeyId, key.arn);
  }

  private checkDate(claim: SignatureClaim, now: Date): void {
    const signedAt = parseBasic(claim.longDate);
    if (signedAt === undefined) {
      throw new GatewayRefusal(
        invalidSignature(
          `Date must be in ISO-8601 'basic format'. Got '${claim.longDate}'. See http://en.wikipedia.org/wiki/ISO_8601`,
        ),
      );
    }
    const nowText = basic(now);
    if (claim.presigned && claim.expiresSeconds !== undefined) {
      const expiresAt = new Date(signedAt.getTime() + claim.expiresSeconds * 1000);
      if (expiresAt < now)
        throw new GatewayRefusal(
          invalidSignature(`Signature expired: ${basic(expiresAt)} is now earlier than ${nowText}`),
        );
    } else if (signedAt.getTime() < now.getTime() - SKEW_MS) {
      const floor = basic(new Date(now.getTime() - SKEW_MS));
      throw new GatewayRefusal(
        invalidSignature(
          `Signature expired: ${claim.longDate} is now earlier than ${floor} (${nowText} - 5 min.)`,
        ),
      );
    }
    if (signedAt.getTime() > now.getTime() + SKEW_MS) {
      const ceiling = basic(new Date(now.getTime() + SKEW_MS));
      throw new GatewayRefusal(
        invalidSignature(
          `Signature not yet current: ${claim.longDate} is still later than ${ceiling} (${nowText} + 5 min.)`,
        ),
      );
    }
  }

  private checkScope(claim: SignatureClaim): void {
    const [date = "", region = "", service = "", terminator = ""] = claim.scope;
    if (claim.scope.length !== 4 || terminator !== "aws4_request")
      throw new GatewayRefusal(
        invalidSignature(
          `Credential should be scoped with a valid terminator: 'aws4_request', not '${terminator}'. `,
        ),
      );
    if (date !== claim.longDate.slice(0, 8))
      throw new GatewayRefusal(
        invalidSignature(
          `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${date}' != '${claim.longDate.slice(0, 8)}', from '${claim.longDate}'.`,
        ),
      );
    if (region !== this.region)
      throw new GatewayRefusal(
        invalidSignature(`Credential should be scoped to a valid region, not '${region}'. `),
      );
    if (service !== SERVICE)
      throw new GatewayRefusal(
        invalidSignature(`Credential should be scoped to correct service: '${SERVICE}'. `),
      );
  }

  private async checkSignature(
    request: ReceivedRequest,
    claim: SignatureClaim,
    key: CallerKey,
  ): Promise<void> {
    const computed = await this.canonical.compute(request, claim, key);
    const given = Buffer.from(claim.signature, "utf8");
    const expected = Buffer.from(computed.signature, "utf8");
    if (given.length === expected.length && timingSafeEqual(given, expected)) return;
    throw new GatewayRefusal(
      invalidSignature(
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n\n" +
          `The Canonical String for this request should have been\n'${computed.canonicalRequest}'\n\n` +
          `The String-to-Sign should have been\n'${computed.stringToSign}'\n`,
      ),
    );
  }
}

/**
 * The SDK signer's canonical request and string to sign (protected in SignatureV4, reached through a
 * subclass), so the receiving side builds exactly what a signing client built. Its own credentials are
 * never used: the signing key comes from the caller's secret.
 */
class CanonicalForm extends SignatureV4 {
  constructor(private readonly signingRegion: string) {
    super({
      service: SERVICE,
      region: signingRegion,
      credentials: { accessKeyId: "unused", secretAccessKey: "unused" },
      sha256: Hash.bind(null, "sha256"),
    });
  }

  async compute(request: ReceivedRequest, claim: SignatureClaim, key: CallerKey) {
    const query: Record<string, string | string[]> = {};
    for (const [name, value] of queryPairs(request.rawQuery)) {
      const previous = query[name];
      query[name] =
        previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value];
    }
    const headers: HeaderBag = {};
    for (const name of claim.signedHeaders) headers[name] = headerValues(request, name).join(",");
    const httpRequest: HttpRequest = {
      method: request.method,
      protocol: "http:",
      hostname: "",
      path: request.rawPath,
      query,
      headers,
    };
    // The body as received, never a client-declared x-amz-content-sha256: API Gateway checks the bytes.
    const payloadHash = await getPayloadHash(
      { ...httpRequest, headers: {}, body: request.body },
      this.sha256,
    );
    const canonicalHeaders = getCanonicalHeaders(httpRequest, undefined, new Set(claim.signedHeaders));
    const canonicalRequest = this.createCanonicalRequest(httpRequest, canonicalHeaders, payloadHash);
    const shortDate = claim.longDate.slice(0, 8);
    const scope = createScope(shortDate, this.signingRegion, SERVICE);
    const stringToSign = await this.createStringToSign(
      claim.longDate,
      scope,
      canonicalRequest,
      ALGORITHM_IDENTIFIER,
    );
    const credentials = { accessKeyId: claim.accessKeyId, secretAccessKey: key.secretAccessKey };
    const signingKey = await getSigningKey(this.sha256, credentials, shortDate, this.signingRegion, SERVICE);
    const hmac = new Hash("sha256", signingKey);
    hmac.update(stringToSign);
    const signature = Buffer.from(await hmac.digest()).toString("hex");
    return { canonicalRequest, stringToSign, signature };
  }
}

function parseBasic(value: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const date = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}Z`);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

function basic(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}
