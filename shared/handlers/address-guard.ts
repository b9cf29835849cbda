import { BlockList, isIP } from "node:net";

/**
 * Which destinations a webhook may reach.
 *
 * - Link-local, metadata, multicast and reserved ranges are refused always: no user webhook needs
 *   them, and 169.254.169.254 / fd00:ec2::254 are the classic SSRF targets.
 * - Private ranges (RFC 1918, CGNAT, ULA) and loopback only when `allowPrivate` is set.
 * - Loopback needs `allowLoopback` on top: on AWS, 127.0.0.1:9001 is the Lambda Runtime API, so
 *   loopback stays refused there even when private targets (inside the VPC) are allowed.
 * - Addresses that translate to IPv4 (NAT64, IPv4-compatible, IPv4-translated, 6to4, Teredo) reach
 *   an IPv4 host the other rules never saw: refused outright unless private targets are allowed,
 *   and then judged as the IPv4 address they carry.
 * - `refusedPorts`: the embedded stack's own services (Redis, DynamoDB Local, the SQS emulator, the
 *   API itself) hold every tenant's data with no authentication of their own, so a webhook may not
 *   call them, whatever the address (DynamoDB Local listens on every interface).
 */
export interface AddressPolicy {
  readonly allowPrivate: boolean;
  readonly allowLoopback: boolean;
  readonly refusedPorts: ReadonlySet<number>;
}

const alwaysRefused = new BlockList();
alwaysRefused.addSubnet("169.254.0.0", 16, "ipv4");
alwaysRefused.addSubnet("0.0.0.0", 8, "ipv4");
alwaysRefused.addSubnet("224.0.0.0", 3, "ipv4"); // multicast, reserved and broadcast
alwaysRefused.addSubnet("fe80::", 10, "ipv6");
alwaysRefused.addAddress("fd00:ec2::254", "ipv6");
alwaysRefused.addSubnet("ff00::", 8, "ipv6");

const loopback = new BlockList();
loopback.addSubnet("127.0.0.0", 8, "ipv4");
loopback.addAddress("::1", "ipv6");

const privateRanges = new BlockList();
privateRanges.addSubnet("10.0.0.0", 8, "ipv4");
privateRanges.addSubnet("172.16.0.0", 12, "ipv4");
privateRanges.addSubnet("192.168.0.0", 16, "ipv4");
privateRanges.addSubnet("100.64.0.0", 10, "ipv4");
privateRanges.addSubnet("198.18.0.0", 15, "ipv4");
privateRanges.addSubnet("fc00::", 7, "ipv6");

export const REFUSED = {
  reserved: "link-local, metadata or reserved address",
  private: "private address",
  loopback: "loopback address",
  translated: "address translated to IPv4 (NAT64, 6to4, Teredo, IPv4-compatible or -mapped)",
  port: "a port of the embedded stack's own services",
} as const;

/** Returns why an address is refused, or undefined when it may be contacted. */
export function refusalFor(address: string, policy: AddressPolicy): string | undefined {
  const family = isIP(address);
  if (family === 0) return "not an IP address";
  if (family === 4) return judgeV4(address, policy);
  const bytes = ipv6Bytes(address);
  if (!bytes) return "not an IP address";
  const translated = embeddedIpv4(bytes);
  if (translated) {
    // IPv4-mapped (::ffff:a.b.c.d) is how Node reports IPv4 answers on dual-stack sockets: it is
    // the IPv4 host itself, not a translation, and is judged as that host under every policy.
    if (translated.kind !== "mapped" && !policy.allowPrivate) return REFUSED.translated;
    return judgeV4(translated.ipv4, policy);
  }
  if (bytes.every((b) => b === 0)) return REFUSED.reserved; // "::"
  if (alwaysRefused.check(address, "ipv6")) return REFUSED.reserved;
  if (loopback.check(address, "ipv6")) return policy.allowLoopback ? undefined : REFUSED.loopback;
  if (!policy.allowPrivate && privateRanges.check(address, "ipv6")) return REFUSED.private;
  return undefined;
}

/** The port a URL connects to, for the `refusedPorts` check. */
export function portRefusal(url: URL, policy: AddressPolicy): string | undefined {
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  return policy.refusedPorts.has(port) ? REFUSED.port : undefined;
}

function judgeV4(ip: string, policy: AddressPolicy): string | undefined {
  if (alwaysRefused.check(ip, "ipv4")) return REFUSED.reserved;
  if (loopback.check(ip, "ipv4")) return policy.allowLoopback ? undefined : REFUSED.loopback;
  if (!policy.allowPrivate && privateRanges.check(ip, "ipv4")) return REFUSED.private;
  return undefined;
}

type Translation = { kind: "mapped" | "translated"; ipv4: string };

/** The IPv4 address inside an IPv6 address of one of the translating ranges, if it is one. */
function embeddedIpv4(b: readonly number[]): Translation | undefined {
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number, xor = 0) => [0, 1, 2, 3].map((i) => (b[at + i]! ^ xor) & 0xff).join(".");
  // ::ffff:a.b.c.d (IPv4-mapped)
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return { kind: "mapped", ipv4: v4(12) };
  // ::ffff:0:a.b.c.d (IPv4-translated, RFC 2765)
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12))
    return { kind: "translated", ipv4: v4(12) };
  // ::a.b.c.d (IPv4-compatible, deprecated); "::" and "::1" are not translations.
  if (zero(0, 12) && !zero(12, 15)) return { kind: "translated", ipv4: v4(12) };
  // 64:ff9b::/96 (NAT64 well-known) and 64:ff9b:1::/48 (NAT64 local use, RFC 8215)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b)
    return { kind: "translated", ipv4: v4(12) };
  // 2002::/16 (6to4): the IPv4 address is in bits 16..47
  if (b[0] === 0x20 && b[1] === 0x02) return { kind: "translated", ipv4: v4(2) };
  // 2001::/32 (Teredo): the client's IPv4 address, inverted, in the last 32 bits
  if (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x00 && b[3] === 0x00)
    return { kind: "translated", ipv4: v4(12, 0xff) };
  return undefined;
}

/** The 16 bytes of an IPv6 address (with or without an embedded dotted quad or zone). */
function ipv6Bytes(address: string): number[] | undefined {
  let text = address.replace(/%.*$/, "");
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const missing = 8 - left.length - right.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return undefined;
  const groups = [...left, ...Array<string>(missing).fill("0"), ...right].map((g) => Number.parseInt(g, 16));
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return undefined;
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}
