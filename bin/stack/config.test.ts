import { describe, expect, it } from "vitest";
import { defaultStateDir, readStackConfig } from "./config.ts";

describe("readStackConfig", () => {
  it("defaults to a local anvil on 8545 and the node's unlocked deployer", () => {
    expect(readStackConfig({})).toEqual({ rpcUrl: undefined, anvilPort: 8545, enclavePort: 8790, edgePort: 8787, stateDir: defaultStateDir, deployerPrivateKey: undefined });
    expect(defaultStateDir.endsWith("/.sigil")).toBe(true);
  });

  it("reads every variable", () => {
    const key = `0x${"ab".repeat(32)}`;
    expect(
      readStackConfig({
        SIGIL_RPC_URL: "http://127.0.0.1:9545",
        SIGIL_ANVIL_PORT: "0",
        SIGIL_ENCLAVE_PORT: "9790",
        SIGIL_EDGE_PORT: "9787",
        SIGIL_STATE_DIR: "/tmp/sigil-state",
        SIGIL_DEPLOYER_PRIVATE_KEY: key,
      }),
    ).toEqual({ rpcUrl: "http://127.0.0.1:9545", anvilPort: 0, enclavePort: 9790, edgePort: 9787, stateDir: "/tmp/sigil-state", deployerPrivateKey: key });
  });

  it("names each bad variable", () => {
    expect(() => readStackConfig({ SIGIL_ANVIL_PORT: "70000" })).toThrow(/SIGIL_ANVIL_PORT/);
    expect(() => readStackConfig({ SIGIL_RPC_URL: "not a url" })).toThrow(/SIGIL_RPC_URL/);
    expect(() => readStackConfig({ SIGIL_RPC_URL: "ftp://127.0.0.1" })).toThrow(/SIGIL_RPC_URL/);
  });

  it("never echoes a malformed private key in its error", () => {
    const secret = "0xdeadbeef-not-a-key-but-secret";
    let message = "";
    try {
      readStackConfig({ SIGIL_DEPLOYER_PRIVATE_KEY: secret });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/SIGIL_DEPLOYER_PRIVATE_KEY/);
    expect(message).not.toContain(secret);
  });
});
