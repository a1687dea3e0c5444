// Writes Ethereum v3 keystores (Web3 Secret Storage) for the tests of `--keystore`: the key
// derived from the password with scrypt or PBKDF2-HMAC-SHA256, AES-128-CTR, and the MAC
// keccak-256(derived[16..32] ‖ ciphertext), as geth and ethers write them.
import { createCipheriv, randomBytes, randomUUID } from "node:crypto";
import { pbkdf2 } from "@noble/hashes/pbkdf2";
import { scrypt } from "@noble/hashes/scrypt";
import { sha256 } from "@noble/hashes/sha2";
import { keccak_256 } from "@noble/hashes/sha3";
import { bytesToHex, hexToBytes } from "@noble/hashes/utils";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";

/** A v3 keystore of `privateKey` under `password`; small work factors by default, for tests. */
export function encryptKeystore(
  privateKey: Hex,
  password: string,
  options: { kdf?: "scrypt" | "pbkdf2"; n?: number; c?: number } = {},
): string {
  const salt = randomBytes(32);
  const iv = randomBytes(16);
  const kdf = options.kdf ?? "scrypt";
  const kdfparams =
    kdf === "scrypt"
      ? { dklen: 32, n: options.n ?? 4096, r: 8, p: 1, salt: bytesToHex(salt) }
      : { dklen: 32, c: options.c ?? 4096, prf: "hmac-sha256", salt: bytesToHex(salt) };
  const derived =
    kdf === "scrypt"
      ? scrypt(password, salt, { N: kdfparams.n as number, r: 8, p: 1, dkLen: 32 })
      : pbkdf2(sha256, password, salt, { c: kdfparams.c as number, dkLen: 32 });
  const cipher = createCipheriv("aes-128-ctr", derived.slice(0, 16), iv);
  const ciphertext = Buffer.concat([cipher.update(hexToBytes(privateKey.slice(2))), cipher.final()]);
  const mac = keccak_256(new Uint8Array([...derived.slice(16, 32), ...ciphertext]));
  return JSON.stringify({
    version: 3,
    id: randomUUID(),
    address: privateKeyToAccount(privateKey).address.slice(2).toLowerCase(),
    crypto: {
      cipher: "aes-128-ctr",
      cipherparams: { iv: bytesToHex(iv) },
      ciphertext: ciphertext.toString("hex"),
      kdf,
      kdfparams,
      mac: bytesToHex(mac),
    },
  });
}
