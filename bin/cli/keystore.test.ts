// Reading v3 keystores: the Web3 Secret Storage definition's own test vectors (PBKDF2 and scrypt,
// password "testpassword"), keystores written the way geth writes them, and every refusal: a wrong
// password (the MAC), a key that is not the named address's, formats it does not read.
import { generatePrivateKey } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { encryptKeystore } from "../../test/harness/keystore.ts";
import { CliError } from "./context.ts";
import { decryptKeystore } from "./keystore.ts";

// https://ethereum.org/en/developers/docs/data-structures-and-encoding/web3-secret-storage/#test-vectors
const VECTOR_KEY = "0x7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d";
const PBKDF2_VECTOR = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "6087dab2f9fdbbfaddc31a909735c1e6" },
    ciphertext: "5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46",
    kdf: "pbkdf2",
    kdfparams: {
      c: 262144,
      dklen: 32,
      prf: "hmac-sha256",
      salt: "ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd",
    },
    mac: "517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};
const SCRYPT_VECTOR = {
  crypto: {
    cipher: "aes-128-ctr",
    cipherparams: { iv: "83dbcc02d8ccb40e466191a123791e0e" },
    ciphertext: "d172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c",
    kdf: "scrypt",
    kdfparams: {
      dklen: 32,
      n: 262144,
      r: 1,
      p: 8,
      salt: "ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19",
    },
    mac: "2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097",
  },
  id: "3198bc9c-6672-5ab3-d995-4942343ae5b6",
  version: 3,
};

function refusal(fn: () => unknown): CliError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CliError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

describe("decryptKeystore", () => {
  it("decrypts the Web3 Secret Storage test vectors, PBKDF2 and scrypt", () => {
    expect(decryptKeystore(JSON.stringify(PBKDF2_VECTOR), "testpassword")).toBe(VECTOR_KEY);
    expect(decryptKeystore(JSON.stringify(SCRYPT_VECTOR), "testpassword")).toBe(VECTOR_KEY);
  }, 30_000);

  it("decrypts keystores written as geth writes them, with either KDF", () => {
    const key = generatePrivateKey();
    expect(decryptKeystore(encryptKeystore(key, "pw", { kdf: "scrypt" }), "pw")).toBe(key);
    expect(decryptKeystore(encryptKeystore(key, "pw", { kdf: "pbkdf2" }), "pw")).toBe(key);
  });

  it("refuses a wrong password by the MAC, without decrypting", () => {
    const err = refusal(() => decryptKeystore(encryptKeystore(generatePrivateKey(), "right"), "wrong"));
    expect(err.code).toBe("keystore_password_wrong");
    expect(err.message).toMatch(/MAC does not match/);
  });

  it("refuses a keystore whose key is not the one of the address it names", () => {
    const file = JSON.parse(encryptKeystore(generatePrivateKey(), "pw")) as { address: string };
    file.address = "00000000000000000000000000000000000000a1";
    expect(refusal(() => decryptKeystore(JSON.stringify(file), "pw")).message).toMatch(/not to the address it names/);
  });

  it("refuses what it cannot read: not JSON, another version, another cipher or KDF", () => {
    const good = JSON.parse(encryptKeystore(generatePrivateKey(), "pw")) as {
      version: number;
      crypto: { cipher: string; kdf: string };
    };
    expect(refusal(() => decryptKeystore("{", "pw")).code).toBe("invalid_keystore");
    expect(refusal(() => decryptKeystore(JSON.stringify({ ...good, version: 1 }), "pw")).message).toMatch(/version 1/);
    expect(
      refusal(() =>
        decryptKeystore(JSON.stringify({ ...good, crypto: { ...good.crypto, cipher: "aes-128-cbc" } }), "pw"),
      ).message,
    ).toMatch(/aes-128-cbc/);
    expect(
      refusal(() => decryptKeystore(JSON.stringify({ ...good, crypto: { ...good.crypto, kdf: "argon2" } }), "pw"))
        .message,
    ).toMatch(/kdf argon2/);
  });
});
