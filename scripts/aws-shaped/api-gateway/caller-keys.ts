/**
 * The caller-keys file: which access keys the emulated API Gateway knows, and who they are. One JSON
 * object, access key id → caller:
 *
 *   {
 *     "AKIAALICE0000000000": {
 *       "secretAccessKey": "alice-secret",
 *       "arn": "arn:aws:iam::000000000000:user/alice"
 *     },
 *     "ASIAOPS00000000000": {
 *       "secretAccessKey": "ops-secret",
 *       "sessionToken": "ops-session-token",
 *       "arn": "arn:aws:sts::000000000000:assumed-role/Ops/session"
 *     }
 *   }
 *
 * `arn` is the caller ARN API Gateway reports to the function (`requestContext.identity.userArn`),
 * which Hourglass turns into the tenant: an IAM user (`arn:aws:iam::<account>:user/<name>`), a role
 * session (`arn:aws:sts::<account>:assumed-role/<role>/<session>`), a federated user or the root.
 * A key with `sessionToken` stands for temporary credentials: its requests must carry that token in
 * `x-amz-security-token` (or `X-Amz-Security-Token` when presigned), as STS credentials do.
 *
 * With this file, a key that is not in it is refused (UnrecognizedClientException) and every signature
 * is recomputed with the key's secret. Without it, any key is accepted unverified: see signature.ts.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { CallerKeysFileError } from "./errors.ts";
import type { CallerKey } from "./types.ts";

/** The caller ARN forms API Gateway reports for SigV4 callers (IAM users, role sessions, root…). */
const CALLER_ARN =
  /^arn:aws[a-z-]*:(iam|sts)::\d{12}:(root|user\/.+|assumed-role\/[^/]+\/.+|federated-user\/.+)$/;

const callerKeySchema = z.strictObject({
  secretAccessKey: z.string().min(1),
  arn: z.string().regex(CALLER_ARN, "a caller ARN (arn:aws:iam::<12 digits>:user/<name>, …:assumed-role/…)"),
  sessionToken: z.string().min(1).optional(),
});

const fileSchema = z.record(z.string().regex(/^[A-Za-z0-9]{1,128}$/, "an access key id"), callerKeySchema);

export function loadCallerKeys(file: string): Map<string, CallerKey> {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new CallerKeysFileError(file, `cannot read it: ${(error as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new CallerKeysFileError(file, `not JSON: ${(error as Error).message}`);
  }
  const parsed = fileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "(top level)";
    throw new CallerKeysFileError(file, `${where}: ${issue?.message ?? "invalid"}`);
  }
  const keys = new Map<string, CallerKey>();
  for (const [accessKeyId, caller] of Object.entries(parsed.data)) {
    keys.set(accessKeyId, {
      secretAccessKey: caller.secretAccessKey,
      arn: caller.arn,
      ...(caller.sessionToken !== undefined && { sessionToken: caller.sessionToken }),
    });
  }
  return keys;
}
