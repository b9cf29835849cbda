import { describe, expect, it } from "vitest";
import { createSqsClient } from "../../shared/aws.ts";

/** The SDK's MD5 check of SQS bodies: on by default (AWS), off where the local runtime asks. */
describe("createSqsClient", () => {
  it("verifies bodies with MD5 unless told not to", () => {
    expect(typeof createSqsClient().config.md5).toBe("function");
    expect(typeof createSqsClient({ verifyMd5: true }).config.md5).toBe("function");
    expect(createSqsClient({ verifyMd5: false }).config.md5).toBe(false);
  });
});
