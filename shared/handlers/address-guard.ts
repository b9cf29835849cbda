import { BlockList, isIP } from "node:net";

/**
 * Which destination addresses a webhook may reach. Loopback and private ranges are allowed only
 * when configured (local mode). Link-local ranges, which hold the cloud metadata endpoints
 * (169.254.169.254, fd00:ec2::254), are refused always: no user webhook needs them and they are
 * the classic SSRF target.
 */
const alwaysRefused = new BlockList();
alwaysRefused.addSubnet("169.254.0.0", 16, "ipv4");
alwaysRefused.addSubnet("0.0.0.0", 8, "ipv4");
alwaysRefused.addSubnet("224.0.0.0", 3, "ipv4"); // multicast, reserved and broadcast
alwaysRefused.addSubnet("fe80::", 10, "ipv6");
alwaysRefused.addAddress("fd00:ec2::254", "ipv6");
alwaysRefused.addAddress("::", "ipv6");
alwaysRefused.addSubnet("ff00::", 8, "ipv6");

const privateRanges = new BlockList();
privateRanges.addSubnet("127.0.0.0", 8, "ipv4");
privateRanges.addSubnet("10.0.0.0", 8, "ipv4");
privateRanges.addSubnet("172.16.0.0", 12, "ipv4");
privateRanges.addSubnet("192.168.0.0", 16, "ipv4");
privateRanges.addSubnet("100.64.0.0", 10, "ipv4");
privateRanges.addSubnet("198.18.0.0", 15, "ipv4");
privateRanges.addAddress("::1", "ipv6");
privateRanges.addSubnet("fc00::", 7, "ipv6");

/** Returns why an address is refused, or undefined when it may be contacted. */
export function refusalFor(address: string, allowPrivate: boolean): string | undefined {
  const family = isIP(address);
  if (family === 0) return "not an IP address";
  let ip = address;
  let type: "ipv4" | "ipv6" = family === 4 ? "ipv4" : "ipv6";
  // An IPv4-mapped IPv6 address reaches the IPv4 host: judge it as that host.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) {
    ip = mapped[1]!;
    type = "ipv4";
  }
  if (alwaysRefused.check(ip, type)) return "link-local, metadata or reserved address";
  if (!allowPrivate && privateRanges.check(ip, type)) return "private or loopback address";
  return undefined;
}
