import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ChannelRecipient,
  edgeIdentityFromSeed,
  fromBase64Url,
  generateChannelKeyPair,
  sealRequest,
} from "../../shared/channel/channel.ts";
import { edgeIdentityLines } from "./edgeIdentity.ts";

const root = join(import.meta.dirname, "../..");
const sigil = (args: string[]) =>
  new Promise<{ code: number; out: string; err: string }>((resolve) =>
    execFile(process.execPath, ["bin/sigil.ts", "edge-identity", ...args], { cwd: root }, (error, out, err) =>
      resolve({ code: error ? Number(error.code) : 0, out, err }),
    ),
  );

describe("sigil edge-identity", () => {
  it("makes a seed the edge can use and the public key an enclave allows: a session signed with the one opens under the other", async () => {
    const [seedLine, keyLine] = await edgeIdentityLines();
    const seed = /^SIGIL_EDGE_IDENTITY_KEY=([0-9a-f]{64})$/.exec(seedLine ?? "")?.[1];
    const publicKey = /^SIGIL_ALLOWED_EDGE_KEYS=([A-Za-z0-9_-]{43})$/.exec(keyLine ?? "")?.[1];
    expect(seed).toBeDefined();
    expect(publicKey).toBeDefined();
    const key = await generateChannelKeyPair();
    const enclave = new ChannelRecipient({ key, allowedEdgeKeys: [fromBase64Url(publicKey!)] });
    const call = await sealRequest({
      enclavePublicKey: key.publicKey,
      identity: await edgeIdentityFromSeed(seed!),
      request: { op: "health", ids: { request_id: "r-1" }, input: {} },
    });
    expect((await enclave.open(call.sealed)).request.op).toBe("health");
  });

  it("makes a new seed each time", async () => {
    expect((await edgeIdentityLines())[0]).not.toBe((await edgeIdentityLines())[0]);
  });

  it("with --seed prints only that seed's public key, never the seed", async () => {
    const seed = "11".repeat(32);
    const r = await sigil(["--seed", seed]);
    expect(r.code).toBe(0);
    expect(r.out).not.toContain(seed);
    expect(r.out.trim()).toBe((await edgeIdentityLines(seed))[0]);
    expect(r.out.trim()).toMatch(/^SIGIL_ALLOWED_EDGE_KEYS=[A-Za-z0-9_-]{43}$/);
  });

  it("refuses a seed that is not 64 hex digits, and unknown options, with exit 2 and the usage", async () => {
    for (const args of [["--seed", "abc"], ["--bogus"]]) {
      const r = await sigil(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.err).toContain("usage: sigil edge-identity");
    }
  });
});
