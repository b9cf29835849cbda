import { describe, expect, it } from "vitest";
import { refusalFor } from "../../shared/handlers/address-guard.ts";

describe("webhook address guard", () => {
  it.each([
    ["127.0.0.1"],
    ["10.1.2.3"],
    ["172.16.0.1"],
    ["172.31.255.255"],
    ["192.168.1.1"],
    ["100.64.0.1"],
    ["::1"],
    ["fd12:3456::1"],
    ["::ffff:10.0.0.1"],
  ])("refuses the private or loopback address %s unless private targets are allowed", (address) => {
    expect(refusalFor(address, false)).toMatch(/private/);
    expect(refusalFor(address, true)).toBeUndefined();
  });

  it.each([
    ["169.254.169.254"],
    ["169.254.0.1"],
    ["fd00:ec2::254"],
    ["fe80::1"],
    ["0.0.0.0"],
    ["::ffff:169.254.169.254"],
    ["224.0.0.1"],
  ])("refuses the link-local, metadata or reserved address %s always", (address) => {
    expect(refusalFor(address, false)).toMatch(/link-local|metadata|reserved/);
    expect(refusalFor(address, true)).toMatch(/link-local|metadata|reserved/);
  });

  it.each([["93.184.216.34"], ["172.32.0.1"], ["2606:4700::1111"], ["8.8.8.8"]])(
    "allows the public address %s",
    (address) => {
      expect(refusalFor(address, false)).toBeUndefined();
    },
  );
});
