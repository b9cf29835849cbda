import { createHash } from "node:crypto";

/**
 * Who signed a request, in the terms API Gateway reports it: REST and payload 1.0 in
 * `requestContext.identity` (`accessKey`, `accountId`, `caller`, `user`, `userArn`), payload 2.0 in
 * `requestContext.authorizer.iam` (`accessKey`, `accountId`, `callerId`, `userArn`, `userId`).
 */
export interface CallerIdentity {
  readonly accessKey: string;
  /** The caller's own account, from its ARN (not necessarily the API's). */
  readonly accountId: string;
  readonly userArn: string;
  /** IAM's `caller`/`user`: the unique id, with `:<session>` for a role session. */
  readonly caller: string;
  /** 2.0's `userId`: the unique id without the session. */
  readonly userId: string;
}

/** The caller API Gateway reports for a key nobody mapped: an IAM user named after the key. */
export function unmappedCallerArn(accountId: string, accessKeyId: string): string {
  return `arn:aws:iam::${accountId}:user/${accessKeyId}`;
}

/**
 * IAM reports unique ids (`AIDA…` for users, `AROA…:<session>` for role sessions, `<account>:<name>`
 * for federated users, the account id for the root). Locally there is no IAM to ask, so the id is
 * derived from the ARN: stable across requests and distinct per principal, which is all a function
 * can rely on.
 */
export function callerIdentity(accessKey: string, userArn: string): CallerIdentity {
  const match = /^arn:[a-z-]+:(?:iam|sts)::(\d{12}):(.+)$/.exec(userArn);
  const accountId = match?.[1] ?? "";
  const resource = match?.[2] ?? "";
  const parts = resource.split("/");
  if (resource === "root") return { accessKey, accountId, userArn, caller: accountId, userId: accountId };
  if (parts[0] === "assumed-role" && parts.length >= 3) {
    const roleId = uniqueId("AROA", `arn:aws:iam::${accountId}:role/${parts[1]}`);
    return { accessKey, accountId, userArn, caller: `${roleId}:${parts.slice(2).join("/")}`, userId: roleId };
  }
  if (parts[0] === "federated-user" && parts.length >= 2) {
    const id = `${accountId}:${parts.slice(1).join("/")}`;
    return { accessKey, accountId, userArn, caller: id, userId: id };
  }
  const userId = uniqueId("AIDA", userArn);
  return { accessKey, accountId, userArn, caller: userId, userId };
}

/** A 21-character IAM-style unique id: the type prefix and 17 characters of the principal's hash. */
function uniqueId(prefix: string, principal: string): string {
  return prefix + createHash("sha256").update(principal).digest("hex").slice(0, 17).toUpperCase();
}
