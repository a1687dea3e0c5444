// A name server on 127.0.0.1 (UDP) for the tests of scripts' DNS: it answers A queries for the names
// it is given, answers AAAA queries with no records, says NXDOMAIN for other names, and never answers
// the names it is told to ignore — a slow or dead resolver, without a packet leaving the machine.
import { createSocket } from "node:dgram";
import type { AddressInfo } from "node:net";

export type DnsServer = {
  /** "127.0.0.1:port", as SIGIL_DNS_SERVERS takes it. */
  address: string;
  /** Questions received, as "name type" (A, AAAA or the numeric type). */
  readonly questions: string[];
  close(): Promise<void>;
};

const TYPES: Record<number, string> = { 1: "A", 28: "AAAA" };

function readName(packet: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (i < packet.length) {
    const length = packet[i] as number;
    if (length === 0) return { name: labels.join(".").toLowerCase(), end: i + 1 };
    labels.push(packet.subarray(i + 1, i + 1 + length).toString("latin1"));
    i += 1 + length;
  }
  throw new Error("truncated question");
}

export async function startDnsServer(options: {
  answers: Record<string, string>;
  silent?: string[];
}): Promise<DnsServer> {
  const socket = createSocket("udp4");
  const questions: string[] = [];
  const silent = new Set((options.silent ?? []).map((n) => n.toLowerCase()));
  socket.on("message", (query, peer) => {
    if (query.length < 12) return;
    let question;
    try {
      question = readName(query, 12);
    } catch {
      return;
    }
    const type = query.readUInt16BE(question.end);
    questions.push(`${question.name} ${TYPES[type] ?? type}`);
    if (silent.has(question.name)) return;
    const address = options.answers[question.name];
    const records = address !== undefined && type === 1 ? [address] : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0);
    // QR, RD copied, RA; NXDOMAIN for a name we do not know.
    header.writeUInt16BE(0x8180 | (address === undefined ? 3 : 0), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const questionBytes = query.subarray(12, question.end + 4);
    const answers = records.map((ip) => {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the name, as a pointer to the question's
      rr.writeUInt16BE(1, 2); // A
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(5, 6); // TTL
      rr.writeUInt16BE(4, 10);
      for (const [i, octet] of ip.split(".").entries()) rr.writeUInt8(Number(octet), 12 + i);
      return rr;
    });
    socket.send(Buffer.concat([header, questionBytes, ...answers]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    questions,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
