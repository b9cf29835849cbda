import { describe, expect, it } from "vitest";
import { z } from "zod";
import { EventValidationError } from "../../shared/events/errors.ts";
import { toNewEvent, type ValidationRules } from "../../shared/events/validate.ts";
import { defineHandler, HandlerRegistry } from "../../shared/handlers/registry.ts";
import { webhookPayload } from "../../shared/handlers/webhook.ts";

const registry = new HandlerRegistry([
  defineHandler("mail.send", z.object({ to: z.string().email() }), async () => {}),
  defineHandler("internal.thing", z.null(), async () => {}, { internal: true }),
  defineHandler("webhook", webhookPayload, async () => {}),
]);
const rules: ValidationRules = {
  registry,
  horizonMs: 366 * 86_400_000,
  allowInternal: false,
  newId: () => "generated",
};
const now = Date.parse("2026-12-01T00:00:00Z");

function issues(input: unknown) {
  try {
    toNewEvent(input, "t", now, rules);
  } catch (error) {
    expect(error).toBeInstanceOf(EventValidationError);
    return (error as EventValidationError).issues;
  }
  throw new Error("expected a validation error");
}

describe("toNewEvent", () => {
  it("resolves delaySeconds and runAt to epoch ms", () => {
    expect(
      toNewEvent({ type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 2 }, "t", now, rules).runAt,
    ).toBe(now + 2_000);
    expect(
      toNewEvent(
        { type: "mail.send", payload: { to: "a@b.co" }, runAt: "2026-12-01T01:00:00+01:00" },
        "t",
        now,
        rules,
      ).runAt,
    ).toBe(now);
  });

  it("names the field that is wrong", () => {
    expect(issues({ type: "mail.send", payload: { to: "x" }, delaySeconds: 1 })[0]!.path).toBe("payload.to");
    expect(
      issues({
        type: "mail.send",
        payload: { to: "a@b.co" },
        runAt: "2026-12-01T00:00:00Z",
        delaySeconds: 1,
      })[0],
    ).toEqual({
      path: "runAt",
      message: "give runAt or delaySeconds, not both",
    });
    expect(issues({ type: "mail.send", payload: { to: "a@b.co" } })[0]!.path).toBe("runAt");
    expect(issues({ type: "nope", payload: {}, delaySeconds: 1 })[0]).toMatchObject({ path: "type" });
    expect(issues({ type: "internal.thing", payload: null, delaySeconds: 1 })[0]).toMatchObject({
      path: "type",
    });
    expect(
      issues({ type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 367 * 86_400 })[0]!.path,
    ).toBe("delaySeconds");
    expect(
      issues({ id: "has space", type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 1 })[0]!.path,
    ).toBe("id");
    expect(
      issues({ type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 1, extra: 1 })[0]!.message,
    ).toMatch(/extra/);
  });

  it("fingerprints content, not key order or the moment a relative delay was resolved", () => {
    const a = toNewEvent(
      { id: "k", type: "mail.send", payload: { to: "a@b.co", cc: 1 }, delaySeconds: 5 },
      "t",
      now,
      {
        ...rules,
        registry: new HandlerRegistry([
          defineHandler("mail.send", z.object({ to: z.string(), cc: z.number() }), async () => {}),
        ]),
      },
    );
    const b = toNewEvent(
      { delaySeconds: 5, payload: { cc: 1, to: "a@b.co" }, type: "mail.send", id: "k" },
      "t",
      now + 9_000,
      {
        ...rules,
        registry: new HandlerRegistry([
          defineHandler("mail.send", z.object({ to: z.string(), cc: z.number() }), async () => {}),
        ]),
      },
    );
    expect(a.fingerprint).toBe(b.fingerprint);
    const c = toNewEvent(
      { id: "k", type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 6 },
      "t",
      now,
      rules,
    );
    const d = toNewEvent(
      { id: "k", type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 5 },
      "t",
      now,
      rules,
    );
    expect(c.fingerprint).not.toBe(d.fingerprint);
    // A generated id can never be sent again, so its content is not fingerprinted.
    expect(
      toNewEvent({ type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 5 }, "t", now, rules)
        .fingerprint,
    ).toBe("");
  });
});

describe("retry policies", () => {
  it("refuses a backoff whose maxDelayMs is below its delayMs, naming maxDelayMs", () => {
    const backoff = { strategy: "exponential", delayMs: 1_000, maxDelayMs: 10 };
    expect(issues({ type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 1, backoff })[0]).toEqual({
      path: "backoff.maxDelayMs",
      message: expect.stringMatching(/delayMs/),
    });
    const equal = { ...backoff, maxDelayMs: 1_000 };
    expect(
      toNewEvent(
        { type: "mail.send", payload: { to: "a@b.co" }, delaySeconds: 1, backoff: equal },
        "t",
        now,
        rules,
      ).backoff,
    ).toEqual(equal);
  });
});

describe("webhook payloads", () => {
  const url = "https://example.com/hook";
  const headersIssue = (headers: Record<string, string>) =>
    issues({ type: "webhook", payload: { url, headers }, delaySeconds: 1 })[0]!;

  // These used to be accepted (201), then failed every attempt with ERR_INVALID_HTTP_TOKEN or
  // ERR_INVALID_CHAR and went to the dead letters after all of them.
  it("refuses header names and values no HTTP request can carry, naming the header", () => {
    expect(headersIssue({ "bad header": "x" })).toEqual({
      path: "payload.headers.bad header",
      message: expect.stringMatching(/not a header name/),
    });
    // The empty name, as the path joins it.
    expect(headersIssue({ "": "x" })).toMatchObject({ path: "payload.headers." });
    expect(headersIssue({ "x-a": "line\r\nInjected: 1" })).toMatchObject({ path: "payload.headers.x-a" });
    expect(headersIssue({ "x-a": "nul\u0000" })).toMatchObject({ path: "payload.headers.x-a" });
    expect(headersIssue({ "x-a": "euro €" })).toMatchObject({ path: "payload.headers.x-a" });
  });

  it("accepts every header a request can carry", () => {
    const headers = { "X-Token_1.2~!#$%&'*+^`|": "tab\tand visible ascii ~ and latin-1 é", "x-empty": "" };
    expect(
      toNewEvent({ type: "webhook", payload: { url, headers }, delaySeconds: 1 }, "t", now, rules).payload,
    ).toEqual({
      url,
      headers,
    });
  });
});
