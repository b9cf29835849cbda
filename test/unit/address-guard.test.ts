import { describe, expect, it } from "vitest";
import { type AddressPolicy, portRefusal, refusalFor } from "../../shared/handlers/address-guard.ts";

const none = new Set<number>();
const closed: AddressPolicy = { allowPrivate: false, allowLoopback: false, refusedPorts: none };
const local: AddressPolicy = { allowPrivate: true, allowLoopback: true, refusedPorts: none };
/** AWS with webhookAllowPrivate: VPC targets yes, the Lambda Runtime API on loopback no. */
const awsPrivate: AddressPolicy = { allowPrivate: true, allowLoopback: false, refusedPorts: none };

describe("webhook address guard", () => {
  it.each([
    ["10.1.2.3"],
    ["172.16.0.1"],
    ["172.31.255.255"],
    ["192.168.1.1"],
    ["100.64.0.1"],
    ["fd12:3456::1"],
    ["::ffff:10.0.0.1"],
    ["::ffff:a00:1"],
  ])("refuses the private address %s unless private targets are allowed", (address) => {
    expect(refusalFor(address, closed)).toMatch(/private/);
    expect(refusalFor(address, local)).toBeUndefined();
    expect(refusalFor(address, awsPrivate)).toBeUndefined();
  });

  it.each([["127.0.0.1"], ["127.0.0.2"], ["::1"], ["::ffff:127.0.0.1"], ["::ffff:7f00:1"]])(
    "refuses loopback %s on AWS even with private targets allowed (the Lambda Runtime API)",
    (address) => {
      expect(refusalFor(address, closed)).toMatch(/loopback/);
      expect(refusalFor(address, awsPrivate)).toMatch(/loopback/);
      expect(refusalFor(address, local)).toBeUndefined();
    },
  );

  it.each([
    ["64:ff9b::7f00:1", "NAT64 of 127.0.0.1"],
    ["64:ff9b::a00:1", "NAT64 of 10.0.0.1"],
    ["64:ff9b:1::a00:1", "local-use NAT64"],
    ["::7f00:1", "IPv4-compatible 127.0.0.1"],
    ["::10.0.0.1", "IPv4-compatible 10.0.0.1"],
    ["::ffff:0:7f00:1", "IPv4-translated 127.0.0.1"],
    ["2002:7f00:1::1", "6to4 of 127.0.0.1"],
    ["2002:5db8:d822::1", "6to4 of a public address"],
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo"],
  ])("refuses the translated address %s (%s) unless private targets are allowed", (address) => {
    expect(refusalFor(address, closed)).toMatch(/translated/);
  });

  it.each([["64:ff9b::a9fe:a9fe"], ["::ffff:0:a9fe:a9fe"], ["::169.254.169.254"], ["2002:a9fe:a9fe::1"]])(
    "judges translated %s as the IPv4 host it carries: the metadata endpoint stays refused",
    (address) => {
      expect(refusalFor(address, local)).toMatch(/link-local|metadata|reserved/);
    },
  );

  it("judges translated loopback as loopback when private targets are allowed on AWS", () => {
    expect(refusalFor("64:ff9b::7f00:1", awsPrivate)).toMatch(/loopback/);
  });

  it.each([
    ["169.254.169.254"],
    ["169.254.0.1"],
    ["fd00:ec2::254"],
    ["fe80::1"],
    ["0.0.0.0"],
    ["::"],
    ["::ffff:169.254.169.254"],
    ["224.0.0.1"],
    ["ff02::1"],
  ])("refuses the link-local, metadata or reserved address %s always", (address) => {
    expect(refusalFor(address, closed)).toMatch(/link-local|metadata|reserved/);
    expect(refusalFor(address, local)).toMatch(/link-local|metadata|reserved/);
  });

  it.each([["93.184.216.34"], ["172.32.0.1"], ["2606:4700::1111"], ["8.8.8.8"], ["2a00:1450::1"]])(
    "allows the public address %s",
    (address) => {
      expect(refusalFor(address, closed)).toBeUndefined();
    },
  );

  it("refuses the embedded stack's ports whatever the host", () => {
    const policy: AddressPolicy = { ...local, refusedPorts: new Set([6379, 8000, 4566, 3000]) };
    for (const url of ["http://127.0.0.1:6379/", "http://10.0.0.5:8000/", "http://example.com:4566/"])
      expect(portRefusal(new URL(url), policy), url).toMatch(/embedded stack/);
    expect(portRefusal(new URL("http://127.0.0.1:8080/"), policy)).toBeUndefined();
    expect(portRefusal(new URL("https://example.com/"), policy)).toBeUndefined();
  });
});
