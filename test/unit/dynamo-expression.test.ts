import { describe, expect, it } from "vitest";
import {
  and,
  atLeast,
  atMost,
  contains,
  equals,
  exists,
  greaterThan,
  lessThan,
  not,
  notExists,
  oneOf,
  or,
} from "../../shared/dynamo/conditions.ts";
import { EmptyUpdateError } from "../../shared/dynamo/errors.ts";
import { increment, onlyIf, projection, update } from "../../shared/dynamo/expression.ts";

/** The toolkit's expressions: what DynamoDB is sent, placeholder by placeholder. */
describe("update", () => {
  it("sets, adds and removes, aliasing every name and giving every value its own placeholder", () => {
    expect(
      update({ set: { status: "dead", attempts: 3 }, add: { version: 1 }, remove: ["pdue", "ttl"] }),
    ).toEqual({
      UpdateExpression: "SET #status = :v0, #attempts = :v1 ADD #version :v2 REMOVE #pdue, #ttl",
      ExpressionAttributeNames: {
        "#status": "status",
        "#attempts": "attempts",
        "#version": "version",
        "#pdue": "pdue",
        "#ttl": "ttl",
      },
      ExpressionAttributeValues: { ":v0": "dead", ":v1": 3, ":v2": 1 },
    });
  });

  it("leaves out a set or add whose value is undefined, but keeps zeros, false and empty strings", () => {
    const parts = update({
      set: { a: undefined, b: 0, c: false, d: "" },
      add: { e: undefined, f: 0 },
    });
    expect(parts.UpdateExpression).toBe("SET #b = :v0, #c = :v1, #d = :v2 ADD #f :v3");
    expect(parts.ExpressionAttributeNames).not.toHaveProperty("#a");
    expect(parts.ExpressionAttributeNames).not.toHaveProperty("#e");
    expect(parts.ExpressionAttributeValues).toEqual({ ":v0": 0, ":v1": false, ":v2": "", ":v3": 0 });
  });

  it("writes an increment as if_not_exists(name, 0) + by", () => {
    expect(update({ set: { token: increment(1), held: increment(-4) } })).toEqual({
      UpdateExpression:
        "SET #token = if_not_exists(#token, :v0) + :v1, #held = if_not_exists(#held, :v2) + :v3",
      ExpressionAttributeNames: { "#token": "token", "#held": "held" },
      ExpressionAttributeValues: { ":v0": 0, ":v1": 1, ":v2": 0, ":v3": -4 },
    });
  });

  it("shares one set of placeholders between the update and its condition: one alias a name, no value reused", () => {
    const parts = update({
      set: { status: "scheduled", version: 7 },
      if: and(exists("pk"), oneOf("status", ["scheduled", "retrying"]), lessThan("version", 7)),
    });
    expect(parts.UpdateExpression).toBe("SET #status = :v0, #version = :v1");
    expect(parts.ConditionExpression).toBe(
      "attribute_exists(#pk) AND #status IN (:v2, :v3) AND #version < :v4",
    );
    expect(parts.ExpressionAttributeNames).toEqual({
      "#status": "status",
      "#version": "version",
      "#pk": "pk",
    });
    expect(parts.ExpressionAttributeValues).toEqual({
      ":v0": "scheduled",
      ":v1": 7,
      ":v2": "scheduled",
      ":v3": "retrying",
      ":v4": 7,
    });
  });

  it("aliases a name that cannot stand in a placeholder, and reserved words like any other", () => {
    const parts = update({ set: { "due-at": 1, "a.b": 2, name: "x" }, remove: ["due-at"] });
    expect(parts.UpdateExpression).toBe("SET #_0 = :v0, #_1 = :v1, #name = :v2 REMOVE #_0");
    expect(parts.ExpressionAttributeNames).toEqual({ "#_0": "due-at", "#_1": "a.b", "#name": "name" });
  });

  it("sends no value map when no value is used (DynamoDB refuses an empty one)", () => {
    const parts = update({ remove: ["owner"], if: exists("pk") });
    expect(parts).toEqual({
      UpdateExpression: "REMOVE #owner",
      ConditionExpression: "attribute_exists(#pk)",
      ExpressionAttributeNames: { "#owner": "owner", "#pk": "pk" },
    });
    expect(parts).not.toHaveProperty("ExpressionAttributeValues");
  });

  it("has no ConditionExpression without a condition", () => {
    expect(update({ add: { n: -1 } })).not.toHaveProperty("ConditionExpression");
    expect(update({ add: { n: -1 }, if: undefined })).not.toHaveProperty("ConditionExpression");
  });

  it("refuses an update with nothing to do", () => {
    expect(() => update({})).toThrow(EmptyUpdateError);
    expect(() => update({ set: { a: undefined }, remove: [] })).toThrow(EmptyUpdateError);
  });
});

describe("conditions", () => {
  it("renders each comparison with its operator", () => {
    const rendered = [equals, lessThan, atMost, greaterThan, atLeast].map(
      (compare) => onlyIf(compare("n", 5)).ConditionExpression,
    );
    expect(rendered).toEqual(["#n = :v0", "#n < :v0", "#n <= :v0", "#n > :v0", "#n >= :v0"]);
  });

  it("parenthesises OR, so an AND around it keeps its meaning", () => {
    const parts = onlyIf(and(equals("owner", "me"), or(notExists("pk"), atMost("expiresAt", 10))));
    expect(parts.ConditionExpression).toBe(
      "#owner = :v0 AND (attribute_not_exists(#pk) OR #expiresAt <= :v1)",
    );
    expect(parts.ExpressionAttributeValues).toEqual({ ":v0": "me", ":v1": 10 });
  });

  it("gives a condition rendered twice fresh placeholders each time", () => {
    const pending = oneOf("status", ["a", "b"]);
    const parts = onlyIf(and(pending, or(notExists("v"), pending)));
    expect(parts.ConditionExpression).toBe(
      "#status IN (:v0, :v1) AND (attribute_not_exists(#v) OR #status IN (:v2, :v3))",
    );
    // A condition is rendered per request: the same one in two requests starts from :v0 in each.
    expect(onlyIf(pending).ConditionExpression).toBe("#status IN (:v0, :v1)");
  });

  it("renders contains, and parenthesises NOT so it negates the whole condition", () => {
    const parts = onlyIf(and(equals("neverHeld", true), not(and(contains("voided", "e"), exists("pk")))));
    expect(parts.ConditionExpression).toBe(
      "#neverHeld = :v0 AND (NOT contains(#voided, :v1) AND attribute_exists(#pk))",
    );
    expect(parts.ExpressionAttributeValues).toEqual({ ":v0": true, ":v1": "e" });
  });

  it("builds a condition with names only for a Put", () => {
    expect(onlyIf(notExists("pk"))).toEqual({
      ConditionExpression: "attribute_not_exists(#pk)",
      ExpressionAttributeNames: { "#pk": "pk" },
    });
  });
});

describe("projection", () => {
  it("aliases every attribute read", () => {
    expect(projection(["id", "expiryEventId", "ttl-at"])).toEqual({
      ProjectionExpression: "#id, #expiryEventId, #_2",
      ExpressionAttributeNames: { "#id": "id", "#expiryEventId": "expiryEventId", "#_2": "ttl-at" },
    });
  });
});
