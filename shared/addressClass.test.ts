// The address classifier (shared with the edge's webhook URL guard): pure classification, no sockets.
import { describe, expect, it } from "vitest";
import { classifyAddress, isPublicAddress } from "./addressClass.ts";
import type { AddressClass } from "./addressClass.ts";

const table: Record<AddressClass, string[]> = {
  public: [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "[2606:4700:4700::1001]",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "::ffff:808:808",
    "64:ff9b::8.8.8.8",
    "64:ff9b::101:101",
    "2002:808:808::1",
    "2002:0101:0101::",
  ],
  loopback: [
    "127.0.0.1",
    "127.1.2.3",
    "127.255.255.255",
    "::1",
    "0:0:0:0:0:0:0:1",
    "[::1]",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::FFFF:7F00:0001",
    "0:0:0:0:0:ffff:127.0.0.1",
    "[::ffff:127.0.0.1]",
    "::127.0.0.1",
    "::7f00:1",
    "64:ff9b::127.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::",
    "2002:7f00:0001:1234::5",
  ],
  unspecified: [
    "0.0.0.0",
    "0.1.2.3",
    "0.255.255.255",
    "::",
    "0:0:0:0:0:0:0:0",
    "[::]",
    "::ffff:0.0.0.0",
    "64:ff9b::0.0.0.0",
    "2002::",
    "::2" /* IPv4-compatible 0.0.0.2 */,
  ],
  private: [
    "10.0.0.0",
    "10.1.2.3",
    "10.255.255.255",
    "172.16.0.0",
    "172.20.1.1",
    "172.31.255.255",
    "192.168.0.0",
    "192.168.1.1",
    "192.168.255.255",
    "fc00::",
    "fc00::1",
    "fd12:3456:789a::1",
    "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "fec0::1",
    "::ffff:10.0.0.1",
    "::ffff:a00:1",
    "::ffff:192.168.1.1",
    "::ffff:172.16.0.1",
    "::10.0.0.1",
    "64:ff9b::10.0.0.1",
    "64:ff9b::c0a8:101",
    "64:ff9b:1::10.0.0.1",
    "2002:a00:1::",
    "2002:c0a8:0101::1",
  ],
  link_local: [
    "169.254.0.0",
    "169.254.0.1",
    "169.254.169.253",
    "169.254.255.255",
    "fe80::",
    "fe80::1",
    "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "::ffff:169.254.1.1",
    "64:ff9b::169.254.1.1",
    "2002:a9fe:0101::",
  ],
  cgnat: [
    "100.64.0.0",
    "100.64.0.1",
    "100.100.1.1",
    "100.127.255.255",
    "::ffff:100.64.0.1",
    "64:ff9b::100.64.0.1",
    "2002:6440:1::",
  ],
  metadata: [
    "169.254.169.254",
    "169.254.170.2",
    "100.100.100.200",
    "fd00:ec2::254",
    "fd00:0ec2:0000:0000:0000:0000:0000:0254",
    "[fd00:ec2::254]",
    "::ffff:169.254.169.254",
    "::ffff:a9fe:a9fe",
    "::169.254.169.254",
    "64:ff9b::169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "2002:a9fe:a9fe::",
  ],
  multicast: [
    "224.0.0.1",
    "224.0.0.251",
    "239.255.255.250",
    "239.255.255.255",
    "ff00::",
    "ff02::1",
    "ff05::1:3",
    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    "::ffff:224.0.0.1",
  ],
  broadcast: ["255.255.255.255", "::ffff:255.255.255.255", "64:ff9b::ffff:ffff"],
  documentation: [
    "192.0.2.0",
    "192.0.2.1",
    "192.0.2.255",
    "198.51.100.7",
    "203.0.113.0",
    "203.0.113.255",
    "2001:db8::",
    "2001:db8::1",
    "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
    "3fff::1",
    "::ffff:192.0.2.1",
  ],
  benchmarking: ["198.18.0.0", "198.18.0.1", "198.19.255.255", "2001:2::1", "2001:2:0:ffff::1", "::ffff:198.18.0.1"],
  reserved: [
    "192.0.0.0",
    "192.0.0.8",
    "192.0.0.170",
    "192.0.0.255",
    "192.88.99.1",
    "240.0.0.0",
    "250.1.2.3",
    "255.255.255.254",
    "100::",
    "100::1",
    "100::ffff:ffff:ffff:ffff",
    "2001::1", // Teredo
    "2001:10::1", // ORCHID
    "2001:1ff::1",
    "::8.8.8.8", // IPv4-compatible is deprecated: never public
    "::808:808",
    "64:ff9b:1::8.8.8.8", // local-use NAT64
    "::ffff:0:8.8.8.8", // IPv4-translated, not the IPv4-mapped range
    "1::1",
    "4000::1",
    "5f00::1",
    "e000::1",
  ],
  invalid: [
    "",
    "localhost",
    "example.com",
    "127.1",
    "0177.0.0.1",
    "0x7f000001",
    "2130706433",
    "127.0.0.1.",
    "127.0.0.256",
    " 127.0.0.1",
    "[127.0.0.1]",
    "fe80::1%eth0",
    "fe80::1%25eth0",
    "[fe80::1%eth0]",
    "::1%lo",
    "1::2::3",
    "1:2:3:4:5:6:7:8:9",
    "12345::1",
    "::ffff:127.0.0.256",
    "[::1",
    "::1]",
    "gggg::1",
  ],
};

describe("classifyAddress", () => {
  for (const [cls, addresses] of Object.entries(table)) {
    it.each(addresses)(`%s is ${cls}`, (address) => {
      expect(classifyAddress(address)).toBe(cls);
    });
  }

  it("has range boundaries right on both sides", () => {
    const pairs: Array<[string, AddressClass, string, AddressClass]> = [
      ["9.255.255.255", "public", "10.0.0.0", "private"],
      ["10.255.255.255", "private", "11.0.0.0", "public"],
      ["100.63.255.255", "public", "100.64.0.0", "cgnat"],
      ["100.127.255.255", "cgnat", "100.128.0.0", "public"],
      ["126.255.255.255", "public", "127.0.0.0", "loopback"],
      ["127.255.255.255", "loopback", "128.0.0.0", "public"],
      ["172.15.255.255", "public", "172.16.0.0", "private"],
      ["172.31.255.255", "private", "172.32.0.0", "public"],
      ["198.17.255.255", "public", "198.18.0.0", "benchmarking"],
      ["198.19.255.255", "benchmarking", "198.20.0.0", "public"],
      ["223.255.255.255", "public", "224.0.0.0", "multicast"],
      ["239.255.255.255", "multicast", "240.0.0.0", "reserved"],
      ["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved", "fc00::", "private"],
      ["fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved", "fe80::", "link_local"],
      ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved", "2000::", "public"],
      ["3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation", "3fff:1000::", "public"],
      ["3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public", "4000::", "reserved"],
      ["2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "public", "2001:db8::", "documentation"],
      ["100::ffff:ffff:ffff:ffff", "reserved", "100:0:0:1::", "reserved"],
    ];
    for (const [below, belowClass, above, aboveClass] of pairs) {
      expect([below, classifyAddress(below)]).toEqual([below, belowClass]);
      expect([above, classifyAddress(above)]).toEqual([above, aboveClass]);
    }
  });
});

describe("isPublicAddress", () => {
  it("is true only for the public class", () => {
    for (const [cls, addresses] of Object.entries(table)) {
      for (const address of addresses) expect([address, isPublicAddress(address)]).toEqual([address, cls === "public"]);
    }
  });
});

describe("literal parsing without node:net (the edge imports this file)", () => {
  // (A zone id, fe80::1%eth0, is the one literal isIP accepts and the classifier calls invalid, on purpose.)
  it("accepts and refuses exactly what node:net's isIP does", async () => {
    const { isIP } = await import("node:net");
    const { isIPv4 } = await import("./addressClass.ts");
    const samples = [
      "1.2.3.4",
      "01.2.3.4",
      "1.2.3",
      "1.2.3.4.5",
      "256.1.1.1",
      "0.0.0.0",
      "255.255.255.255",
      "1.2.3.04",
      " 1.2.3.4",
      "::",
      "::1",
      "1::",
      "1::2:",
      ":1::2",
      ":::",
      "1:2:3:4:5:6:7:8",
      "1:2:3:4:5:6:7:8:9",
      "1:2:3:4:5:6:7::",
      "::ffff:1.2.3.4",
      "::ffff:01.2.3.4",
      "1g::1",
      "12345::1",
      "2001:db8::1.2.3.4",
      "1:2:3:4:5:6:1.2.3.4",
      "1:2:3:4:5:6:7:1.2.3.4",
      "0x1::1",
      "+1::1",
    ];
    for (const s of samples) {
      expect(isIPv4(s), s).toBe(isIP(s) === 4);
      expect(classifyAddress(s) !== "invalid", s).toBe(isIP(s) !== 0);
    }
  });
});
