import { describe, expect, it } from "vitest";
import { testHourglass } from "../support/harness.ts";

/**
 * The local runtime's SQS client skips the SDK's MD5 of every body (an emulator on loopback;
 * shared/aws.ts); createSqsClient's own option is covered in test/unit/aws-clients.test.ts.
 */
describe("the SQS client createHourglass builds", () => {
  it("skips the MD5 check in local mode", async () => {
    const hg = await testHourglass();
    try {
      expect(hg.config.mode).toBe("local");
      expect(hg.sqs.config.md5).toBe(false);
    } finally {
      await hg.close();
    }
  });
});
