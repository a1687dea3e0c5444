// Where the root secret R comes from. In production the dstack guest agent releases it (its KMS
// gives the same key to every CVM of this app whose compose hash is allowed on chain); in dev and
// tests it is a random key kept under .sigil/dev/, or a fixed key. config.ts refuses the dev
// provider when SIGIL_ENV=production.
import { DstackClient } from "@phala/dstack-sdk";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EnclaveConfig } from "../config.ts";

/** The dstack key path of Sigil's root; changing it changes every derived address. */
export const ROOT_KEY_PATH = "sigil/root/v1";

export async function loadRootKey(config: EnclaveConfig["rootKey"]): Promise<{ key: Uint8Array; source: string }> {
  if (config.provider === "dstack") {
    // An explicit endpoint (a guest-agent simulator); otherwise the SDK finds /var/run/dstack.sock.
    const client = new DstackClient(config.endpoint);
    const result = await client.getKey(ROOT_KEY_PATH, "root");
    if (result.key.length < 32) throw new Error("the dstack guest agent returned a key shorter than 32 bytes");
    return { key: Uint8Array.from(result.key.subarray(0, 32)), source: "dstack" };
  }
  if (config.fixedKey) return { key: hexBytes(config.fixedKey), source: "dev (fixed)" };
  const dir = join(config.stateDir, "dev");
  const file = join(dir, "root.key");
  if (existsSync(file)) {
    const text = readFileSync(file, "utf8").trim();
    if (!/^0x[0-9a-f]{64}$/.test(text)) throw new Error(`${file} does not hold a 0x-prefixed 32-byte hex key`);
    return { key: hexBytes(text), source: `dev (${file})` };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = crypto.getRandomValues(new Uint8Array(32));
  // wx: two enclaves starting at once must not overwrite each other's fresh key.
  try {
    writeFileSync(file, `0x${Buffer.from(key).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return loadRootKey(config);
    throw err;
  }
  chmodSync(file, 0o600);
  return { key, source: `dev (generated ${file})` };
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.slice(2), "hex"));
}
