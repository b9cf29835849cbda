import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { ConfigError } from "./config.ts";

/**
 * On AWS the Redis AUTH token and the webhook signing secret live in Secrets Manager (JSON secrets
 * with the keys `redisAuthToken` and `webhookSecret`), named by HOURGLASS_SECRET_ARNS, and are read
 * once per Lambda container, never put in environment variables.
 */
export interface HourglassSecrets {
  readonly redisAuthToken?: string;
  readonly webhookSecret?: string;
}

export async function loadSecrets(arns: readonly string[]): Promise<HourglassSecrets> {
  if (arns.length === 0) return {};
  const client = new SecretsManagerClient({});
  try {
    const values = await Promise.all(
      arns.map(async (arn) => {
        const { SecretString } = await client.send(new GetSecretValueCommand({ SecretId: arn }));
        return JSON.parse(SecretString ?? "{}") as HourglassSecrets;
      }),
    );
    return Object.assign({}, ...values) as HourglassSecrets;
  } catch (error) {
    throw new ConfigError("HOURGLASS_SECRET_ARNS", `could not read a secret: ${(error as Error).message}`);
  } finally {
    client.destroy();
  }
}

/** The Redis URL with the AUTH token from the secret, when the URL itself carries none. */
export function withAuthToken(url: string, token: string | undefined): string {
  if (!token) return url;
  const parsed = new URL(url);
  if (!parsed.password) parsed.password = encodeURIComponent(token);
  return parsed.toString();
}
