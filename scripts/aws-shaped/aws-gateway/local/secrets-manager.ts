import { randomUUID } from "node:crypto";
import { AwsFault } from "../errors.ts";
import { jsonReply } from "../protocols.ts";
import type { LocalService } from "../service-call.ts";

/** Secrets Manager appends a hyphen and six random characters to a secret's name in its ARN. */
const ARN_SUFFIX = /-[A-Za-z0-9]{6}$/;

function secretName(arn: string): string {
  const at = arn.indexOf(":secret:");
  return at < 0 ? arn : arn.slice(at + ":secret:".length).replace(ARN_SUFFIX, "");
}

/**
 * GetSecretValue over the harness's secrets, keyed by ARN. A SecretId may also be the secret's
 * name, as on AWS; it resolves to the ARN before IAM sees it, since IAM authorizes the ARN.
 */
export class SecretsManager {
  private readonly byName = new Map<string, string>();
  private readonly versions = new Map<string, string>();
  private readonly created = Date.now() / 1000;

  constructor(
    private readonly secrets: ReadonlyMap<string, string>,
    private readonly region: string,
    private readonly accountId: string,
  ) {
    for (const arn of secrets.keys()) {
      this.byName.set(secretName(arn), arn);
      this.versions.set(arn, randomUUID());
    }
  }

  arnOf(secretId: string): string {
    if (this.secrets.has(secretId) || secretId.startsWith("arn:")) return secretId;
    return (
      this.byName.get(secretId) ??
      `arn:aws:secretsmanager:${this.region}:${this.accountId}:secret:${secretId}`
    );
  }

  readonly operations: LocalService = {
    GetSecretValue: (call) => {
      const arn = this.arnOf(typeof call.input.SecretId === "string" ? call.input.SecretId : "");
      const value = this.secrets.get(arn);
      if (value === undefined) {
        throw new AwsFault(
          400,
          "ResourceNotFoundException",
          "Secrets Manager can't find the specified secret.",
          {
            messageKey: "Message",
          },
        );
      }
      return jsonReply(call.protocol, {
        ARN: arn,
        Name: secretName(arn),
        VersionId: this.versions.get(arn),
        SecretString: value,
        VersionStages: ["AWSCURRENT"],
        CreatedDate: this.created,
      });
    },
  };
}
