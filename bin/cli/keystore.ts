// Ethereum JSON keystores (Web3 Secret Storage, version 3): the key derived from the password with
// scrypt or PBKDF2-HMAC-SHA256, checked against the file's MAC (keccak-256 of the derived key's
// second half and the ciphertext) before anything is decrypted, then AES-128-CTR. A wrong password
// is refused by the MAC, never turned into some other key.
import { createDecipheriv, timingSafeEqual } from "node:crypto";
import { pbkdf2 } from "@noble/hashes/pbkdf2";
import { scrypt } from "@noble/hashes/scrypt";
import { sha256 } from "@noble/hashes/sha2";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import { getAddress, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { CliError } from "./context.ts";

type KeystoreV3 = {
  version: number;
  address?: string;
  crypto: {
    cipher: string;
    cipherparams: { iv: string };
    ciphertext: string;
    kdf: string;
    kdfparams: Record<string, unknown>;
    mac: string;
  };
};

const invalid = (what: string) => new CliError("invalid_keystore", `not a version 3 keystore: ${what}`);

function hexField(value: unknown, what: string): Uint8Array {
  if (typeof value !== "string" || !/^(0x)?([0-9a-fA-F]{2})+$/.test(value)) throw invalid(`${what} is not hex`);
  return hexToBytes(value.replace(/^0x/, ""));
}

function positive(value: unknown, what: string): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
    throw invalid(`${what} is not a positive integer`);
  return value;
}

/** The key the password derives, as the keystore's kdf and kdfparams say. */
function deriveKey(password: string, kdf: string, params: Record<string, unknown>): Uint8Array {
  const salt = hexField(params.salt, "kdfparams.salt");
  const dkLen = positive(params.dklen, "kdfparams.dklen");
  if (dkLen < 32) throw invalid("kdfparams.dklen is below 32");
  if (kdf === "scrypt") {
    const N = positive(params.n, "kdfparams.n");
    const r = positive(params.r, "kdfparams.r");
    const p = positive(params.p, "kdfparams.p");
    return scrypt(password, salt, { N, r, p, dkLen });
  }
  if (kdf === "pbkdf2") {
    if (params.prf !== "hmac-sha256") throw invalid(`kdfparams.prf ${String(params.prf)} (only hmac-sha256)`);
    return pbkdf2(sha256, password, salt, { c: positive(params.c, "kdfparams.c"), dkLen });
  }
  throw invalid(`kdf ${kdf} (scrypt or pbkdf2)`);
}

/** The private key in `text` (a v3 keystore's JSON), decrypted with `password`. */
export function decryptKeystore(text: string, password: string): Hex {
  let file: KeystoreV3;
  try {
    file = JSON.parse(text) as KeystoreV3;
  } catch {
    throw invalid("the file is not JSON");
  }
  // Some tools write `Crypto`.
  const c = (file?.crypto ?? (file as unknown as { Crypto?: KeystoreV3["crypto"] })?.Crypto) as
    | KeystoreV3["crypto"]
    | undefined;
  if (file?.version !== 3) throw invalid(`version ${String(file?.version)}`);
  if (!c || typeof c !== "object") throw invalid("no crypto section");
  if (c.cipher !== "aes-128-ctr") throw invalid(`cipher ${String(c.cipher)} (only aes-128-ctr)`);
  const iv = hexField(c.cipherparams?.iv, "cipherparams.iv");
  if (iv.length !== 16) throw invalid("cipherparams.iv is not 16 bytes");
  const ciphertext = hexField(c.ciphertext, "ciphertext");
  const mac = hexField(c.mac, "mac");
  if (typeof c.kdfparams !== "object" || c.kdfparams === null) throw invalid("no kdfparams");

  const derived = deriveKey(password, c.kdf, c.kdfparams);
  const expected = keccak_256(new Uint8Array([...derived.slice(16, 32), ...ciphertext]));
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) {
    throw new CliError(
      "keystore_password_wrong",
      "the keystore's MAC does not match: the password (SIGIL_KEYSTORE_PASSWORD) is wrong, or the file is damaged",
    );
  }
  const decipher = createDecipheriv("aes-128-ctr", derived.slice(0, 16), iv);
  const key = new Uint8Array(Buffer.concat([decipher.update(ciphertext), decipher.final()]));
  if (key.length !== 32) throw invalid("the decrypted key is not 32 bytes");
  const privateKey = `0x${bytesToHex(key)}` as Hex;
  if (typeof file.address === "string" && /^(0x)?[0-9a-fA-F]{40}$/.test(file.address)) {
    const address = privateKeyToAccount(privateKey).address;
    if (getAddress(`0x${file.address.replace(/^0x/, "")}`) !== address) {
      throw new CliError(
        "invalid_keystore",
        `the keystore's key belongs to ${address}, not to the address it names (0x${file.address.replace(/^0x/, "")})`,
      );
    }
  }
  return privateKey;
}
