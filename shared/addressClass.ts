// Classifies IP literals for the guards that keep outgoing requests off the service's own networks:
// the enclave's fetch guard for scripts (docs/design/sandbox.md, Limits: only "public" may be reached without an
// allow-list entry) and the edge's webhook URL guard (workers/webhooks/url.ts). Embedded IPv4
// (mapped, compatible, NAT64, 6to4) is classified by the IPv4 it carries, so no IPv6 spelling of a
// private IPv4 passes. Anything unparsable is "invalid". Free of Node APIs (the edge imports it):
// the literals are parsed here, as strictly as node:net's isIP.

export type AddressClass =
  | "public"
  | "loopback"
  | "unspecified"
  | "private"
  | "link_local"
  | "cgnat"
  | "metadata"
  | "multicast"
  | "broadcast"
  | "documentation"
  | "benchmarking"
  | "reserved"
  | "invalid";

const descriptions: Record<AddressClass, string> = {
  public: "public",
  loopback: "loopback",
  unspecified: "unspecified",
  private: "private",
  link_local: "link-local",
  cgnat: "carrier-grade NAT",
  metadata: "cloud metadata",
  multicast: "multicast",
  broadcast: "broadcast",
  documentation: "documentation",
  benchmarking: "benchmarking",
  reserved: "reserved",
  invalid: "unrecognized",
};

/** Words for an error message: `${describeAddressClass(c)} address`. */
export function describeAddressClass(c: AddressClass): string {
  return descriptions[c];
}

/** Four decimal octets 0–255 without leading zeros: node:net's isIP(s) === 4. */
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
/** One group of an IPv6 address: 1–4 hex digits. */
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** Whether `s` is a strict dotted-decimal IPv4 literal. */
export function isIPv4(s: string): boolean {
  return IPV4.test(s);
}

/** Strict dotted-decimal IPv4 (what DNS and the URL parser produce) as an unsigned 32-bit number. */
function parseIPv4(s: string): number | null {
  if (!IPV4.test(s)) return null;
  let n = 0;
  for (const part of s.split(".")) n = n * 256 + Number(part);
  return n;
}

/** IPv6 without brackets or zone id as a 128-bit bigint. */
function parseIPv6(s: string): bigint | null {
  if (s.includes("%") || !/^[0-9a-fA-F:.]+$/.test(s) || !s.includes(":")) return null;
  let head = s;
  const tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  const last = s.slice(lastColon + 1);
  if (last.includes(".")) {
    const v4 = parseIPv4(last);
    if (v4 === null) return null;
    tail.push(Math.floor(v4 / 65536), v4 % 65536);
    head = s.slice(0, lastColon + 1);
    if (!head.endsWith("::")) head = head.slice(0, -1);
  }
  const halves = head.split("::");
  if (halves.length > 2) return null;
  const split = (h: string | undefined): string[] => (h ? h.split(":") : []);
  const left = split(halves[0]);
  const right = split(halves[1]);
  if (![...left, ...right].every((g) => HEX_GROUP.test(g))) return null;
  const needed = 8 - tail.length;
  const zeros = needed - left.length - right.length;
  if (halves.length === 1 ? zeros !== 0 : zeros < 0) return null;
  const groups = [
    ...left.map((g) => parseInt(g, 16)),
    ...new Array<number>(zeros).fill(0),
    ...right.map((g) => parseInt(g, 16)),
    ...tail,
  ];
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return null;
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

type Range4 = { base: number; bits: number; cls: AddressClass };
type Range6 = { base: bigint; bits: number; cls: AddressClass };

function range4(cidr: string, cls: AddressClass): Range4 {
  const [ip = "", bits = "32"] = cidr.split("/");
  const base = parseIPv4(ip);
  if (base === null) throw new Error(`bad IPv4 range ${cidr}`);
  return { base, bits: Number(bits), cls };
}

function range6(cidr: string, cls: AddressClass): Range6 {
  const [ip = "", bits = "128"] = cidr.split("/");
  const base = parseIPv6(ip);
  if (base === null) throw new Error(`bad IPv6 range ${cidr}`);
  return { base, bits: Number(bits), cls };
}

// First match wins, so single addresses come before the ranges holding them.
const ranges4: Range4[] = [
  range4("255.255.255.255/32", "broadcast"),
  range4("169.254.169.254/32", "metadata"), // AWS, GCP, Azure, OpenStack, …
  range4("169.254.170.2/32", "metadata"), // AWS ECS task metadata
  range4("100.100.100.200/32", "metadata"), // Alibaba Cloud
  range4("0.0.0.0/8", "unspecified"),
  range4("10.0.0.0/8", "private"),
  range4("100.64.0.0/10", "cgnat"),
  range4("127.0.0.0/8", "loopback"),
  range4("169.254.0.0/16", "link_local"),
  range4("172.16.0.0/12", "private"),
  range4("192.0.0.0/24", "reserved"), // IETF protocol assignments
  range4("192.0.2.0/24", "documentation"),
  range4("192.88.99.0/24", "reserved"), // deprecated 6to4 relay anycast
  range4("192.168.0.0/16", "private"),
  range4("198.18.0.0/15", "benchmarking"),
  range4("198.51.100.0/24", "documentation"),
  range4("203.0.113.0/24", "documentation"),
  range4("224.0.0.0/4", "multicast"),
  range4("240.0.0.0/4", "reserved"),
];

const ranges6: Range6[] = [
  range6("fd00:ec2::254/128", "metadata"), // AWS metadata over IPv6
  range6("100::/64", "reserved"), // discard-only
  range6("2001:2::/48", "benchmarking"),
  range6("2001:db8::/32", "documentation"),
  range6("2001::/23", "reserved"), // IETF protocol assignments, Teredo, ORCHID
  range6("3fff::/20", "documentation"),
  range6("fc00::/7", "private"), // unique local
  range6("fe80::/10", "link_local"),
  range6("fec0::/10", "private"), // deprecated site-local
  range6("ff00::/8", "multicast"),
  range6("2000::/3", "public"), // only global unicast is public; the rest falls through to reserved
];

function inRange4(n: number, r: Range4): boolean {
  const size = 2 ** (32 - r.bits);
  return Math.floor(n / size) === Math.floor(r.base / size);
}

function inRange6(n: bigint, r: Range6): boolean {
  const shift = BigInt(128 - r.bits);
  return n >> shift === r.base >> shift;
}

function classify4(n: number): AddressClass {
  return ranges4.find((r) => inRange4(n, r))?.cls ?? "public";
}

const low32 = (n: bigint): number => Number(n & 0xffffffffn);
const prefix = (cidr: string): Range6 => range6(cidr, "reserved");
const MAPPED = prefix("::ffff:0:0/96");
const COMPATIBLE = prefix("::/96");
const NAT64 = prefix("64:ff9b::/96");
const NAT64_LOCAL = prefix("64:ff9b:1::/48");
const SIX_TO_FOUR = prefix("2002::/16");

/** An embedded IPv4 that is public still makes a non-public IPv6 (deprecated or local-only forms). */
const embeddedOrReserved = (v4: number): AddressClass => {
  const c = classify4(v4);
  return c === "public" ? "reserved" : c;
};

function classify6(n: bigint): AddressClass {
  if (n === 0n) return "unspecified";
  if (n === 1n) return "loopback";
  if (inRange6(n, MAPPED)) return classify4(low32(n));
  if (inRange6(n, COMPATIBLE)) return embeddedOrReserved(low32(n));
  if (inRange6(n, NAT64)) return classify4(low32(n));
  if (inRange6(n, NAT64_LOCAL)) return embeddedOrReserved(low32(n));
  if (inRange6(n, SIX_TO_FOUR)) return classify4(Number((n >> 80n) & 0xffffffffn));
  return ranges6.find((r) => inRange6(n, r))?.cls ?? "reserved";
}

/** The class of an IPv4 or IPv6 literal; IPv6 may be bracketed. Zone ids and anything else unparsable give "invalid". */
export function classifyAddress(ip: string): AddressClass {
  if (IPV4.test(ip)) return classify4(parseIPv4(ip) ?? 0);
  const bare = ip.startsWith("[") && ip.endsWith("]") ? ip.slice(1, -1) : ip;
  const v6 = parseIPv6(bare);
  return v6 === null ? "invalid" : classify6(v6);
}

export function isPublicAddress(ip: string): boolean {
  return classifyAddress(ip) === "public";
}
