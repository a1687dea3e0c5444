// Where the root secret comes from (docs/design/keys-and-authz.md, "Root key and derivation"): the dev provider
// (fixed key, or one generated once under <stateDir>/dev/root.key) and the dstack provider, here
// against the local guest-agent stand-in.
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bytesToHex, hexToBytes } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import { TEST_ROOT_KEY } from "../../test/enclave/constants.ts";
import { startGuestAgent, type GuestAgent } from "../../emulators/dstackGuestAgent.ts";
import { loadRootKey, ROOT_KEY_PATH } from "./rootKey.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function stateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sigil-rootkey-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function agent(secret?: Uint8Array): Promise<GuestAgent> {
  const a = await startGuestAgent(secret);
  cleanups.push(() => a.close());
  return a;
}

describe("dev provider", () => {
  it("returns the fixed key's 32 bytes when one is configured, and writes no file", async () => {
    const dir = stateDir();
    const { key, source } = await loadRootKey({ provider: "dev", fixedKey: TEST_ROOT_KEY, stateDir: dir });
    expect(bytesToHex(key)).toBe(TEST_ROOT_KEY);
    expect(key).toHaveLength(32);
    expect(source).toContain("fixed");
    expect(() => statSync(join(dir, "dev", "root.key"))).toThrow();
  });

  it("generates <stateDir>/dev/root.key on the first call: 0x + 64 lowercase hex, mode 0600", async () => {
    const dir = stateDir();
    const { key, source } = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: dir });
    const file = join(dir, "dev", "root.key");
    const text = readFileSync(file, "utf8").trim();
    expect(text).toMatch(/^0x[0-9a-f]{64}$/);
    expect(text).toBe(bytesToHex(key));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(source).toContain("generated");
    expect(key.some((b) => b !== 0)).toBe(true);
  });

  it("reads the same key back on the second call instead of generating another", async () => {
    const dir = stateDir();
    const first = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: dir });
    const second = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: dir });
    expect(bytesToHex(second.key)).toBe(bytesToHex(first.key));
    expect(second.source).not.toContain("generated");
  });

  it("generates a different key in another state directory", async () => {
    const a = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: stateDir() });
    const b = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: stateDir() });
    expect(bytesToHex(a.key)).not.toBe(bytesToHex(b.key));
  });

  it("reads an existing root.key written by hand (with a trailing newline)", async () => {
    const dir = stateDir();
    mkdirSync(join(dir, "dev"), { recursive: true });
    writeFileSync(join(dir, "dev", "root.key"), `${TEST_ROOT_KEY}\n`, { mode: 0o600 });
    const { key } = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: dir });
    expect(bytesToHex(key)).toBe(TEST_ROOT_KEY);
  });

  it.each([
    ["too short", "0x1234"],
    ["not hex", `0x${"zz".repeat(32)}`],
    ["no 0x prefix", "ab".repeat(32)],
    ["too long", `0x${"ab".repeat(33)}`],
    ["empty", ""],
  ])("refuses a corrupt root.key (%s) with an error naming the file, not its contents", async (_label, contents) => {
    const dir = stateDir();
    const file = join(dir, "dev", "root.key");
    mkdirSync(join(dir, "dev"), { recursive: true });
    writeFileSync(file, contents, { mode: 0o600 });
    const err = await loadRootKey({ provider: "dev", fixedKey: undefined, stateDir: dir }).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err?.message).toContain(file);
    expect(err?.message).toMatch(/32-byte hex key/);
    if (contents.length > 0) expect(err?.message).not.toContain(contents);
    // The corrupt file is left for the operator, not silently replaced.
    expect(readFileSync(file, "utf8")).toBe(contents);
  });
});

describe("dstack provider (local guest-agent stand-in)", () => {
  const standInKey = (secret: Uint8Array, path: string) =>
    bytesToHex(hkdf(sha256, secret, new TextEncoder().encode("dstack-stand-in"), new TextEncoder().encode(path), 32));

  it(`asks /GetKey for the path "${ROOT_KEY_PATH}" and returns the agent's 32-byte key`, async () => {
    expect(ROOT_KEY_PATH).toBe("sigil/root/v1");
    const secret = crypto.getRandomValues(new Uint8Array(32));
    const a = await agent(secret);
    const { key, source } = await loadRootKey({ provider: "dstack", endpoint: a.endpoint });
    expect(source).toBe("dstack");
    expect(key).toHaveLength(32);
    const getKeys = a.calls.filter((c) => c.path === "/GetKey");
    expect(getKeys).toHaveLength(1);
    expect((getKeys[0]?.body as { path?: unknown }).path).toBe("sigil/root/v1");
    // The key is the one the agent derives for exactly that path.
    expect(bytesToHex(key)).toBe(standInKey(secret, "sigil/root/v1"));
  });

  it("gets the same key from the same agent secret (two instances of one app share R)", async () => {
    const secret = hexToBytes(`0x${"42".repeat(32)}`);
    const a = await agent(secret);
    const b = await agent(Uint8Array.from(secret));
    const ka = await loadRootKey({ provider: "dstack", endpoint: a.endpoint });
    const kb = await loadRootKey({ provider: "dstack", endpoint: b.endpoint });
    const again = await loadRootKey({ provider: "dstack", endpoint: a.endpoint });
    expect(bytesToHex(kb.key)).toBe(bytesToHex(ka.key));
    expect(bytesToHex(again.key)).toBe(bytesToHex(ka.key));
  });

  it("gets a different key from another agent secret", async () => {
    const a = await agent(hexToBytes(`0x${"01".repeat(32)}`));
    const b = await agent(hexToBytes(`0x${"02".repeat(32)}`));
    const ka = await loadRootKey({ provider: "dstack", endpoint: a.endpoint });
    const kb = await loadRootKey({ provider: "dstack", endpoint: b.endpoint });
    expect(bytesToHex(kb.key)).not.toBe(bytesToHex(ka.key));
  });

  it("fails when the guest agent cannot be reached", async () => {
    const a = await agent();
    const endpoint = a.endpoint;
    await a.close();
    await expect(loadRootKey({ provider: "dstack", endpoint })).rejects.toThrow();
  });
});
