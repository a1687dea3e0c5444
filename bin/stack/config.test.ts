import { describe, expect, it } from "vitest";
import { defaultStateDir, readStackConfig } from "./config.ts";

describe("readStackConfig", () => {
  it("defaults to a local anvil on 8545 and the node's unlocked deployer", () => {
    expect(readStackConfig({})).toEqual({
      rpcUrl: undefined,
      ports: {
        anvil: { variable: "SIGIL_ANVIL_PORT", port: 8545, chosen: false },
        edge: { variable: "SIGIL_EDGE_PORT", port: 8787, chosen: false },
        enclave: { variable: "SIGIL_ENCLAVE_PORT", port: 8790, chosen: false },
        stripe: { variable: "SIGIL_STRIPE_PORT", port: 12111, chosen: false },
      },
      stateDir: defaultStateDir,
      deployerPrivateKey: undefined,
      billing: true,
      ipfsGateway: undefined,
      webhookRetryBaseMs: undefined,
      receiptAnchorIntervalS: undefined,
      stripe: undefined,
    });
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
        SIGIL_BILLING: "off",
        SIGIL_STRIPE_PORT: "0",
        SIGIL_IPFS_GATEWAY: "http://127.0.0.1:8080",
        SIGIL_WEBHOOK_RETRY_BASE_MS: "200",
        SIGIL_RECEIPT_ANCHOR_INTERVAL_S: "5",
        STRIPE_SECRET_KEY: "sk_test_1",
        STRIPE_PUBLISHABLE_KEY: "pk_test_1",
        STRIPE_WEBHOOK_SECRET: "whsec_1",
      }),
    ).toEqual({
      rpcUrl: "http://127.0.0.1:9545",
      ports: {
        anvil: { variable: "SIGIL_ANVIL_PORT", port: 0, chosen: true },
        edge: { variable: "SIGIL_EDGE_PORT", port: 9787, chosen: true },
        enclave: { variable: "SIGIL_ENCLAVE_PORT", port: 9790, chosen: true },
        stripe: { variable: "SIGIL_STRIPE_PORT", port: 0, chosen: true },
      },
      stateDir: "/tmp/sigil-state",
      deployerPrivateKey: key,
      billing: false,
      ipfsGateway: "http://127.0.0.1:8080",
      webhookRetryBaseMs: 200,
      receiptAnchorIntervalS: 5,
      stripe: { secretKey: "sk_test_1", publishableKey: "pk_test_1", webhookSecret: "whsec_1" },
    });
  });

  it("marks a port the user set, the default's own value included, as chosen", () => {
    expect(readStackConfig({ SIGIL_EDGE_PORT: "8787" }).ports.edge).toEqual({
      variable: "SIGIL_EDGE_PORT",
      port: 8787,
      chosen: true,
    });
    expect(readStackConfig({ SIGIL_EDGE_PORT: "" }).ports.edge.chosen).toBe(false);
  });

  it("names each bad variable", () => {
    expect(() => readStackConfig({ SIGIL_ANVIL_PORT: "70000" })).toThrow(/SIGIL_ANVIL_PORT/);
    expect(() => readStackConfig({ SIGIL_RPC_URL: "not a url" })).toThrow(/SIGIL_RPC_URL/);
    expect(() => readStackConfig({ SIGIL_RPC_URL: "ftp://127.0.0.1" })).toThrow(/SIGIL_RPC_URL/);
    expect(() => readStackConfig({ SIGIL_BILLING: "maybe" })).toThrow(/SIGIL_BILLING/);
    expect(() => readStackConfig({ SIGIL_IPFS_GATEWAY: "ipfs://gateway" })).toThrow(/SIGIL_IPFS_GATEWAY/);
    expect(() => readStackConfig({ SIGIL_WEBHOOK_RETRY_BASE_MS: "5" })).toThrow(/SIGIL_WEBHOOK_RETRY_BASE_MS/);
  });

  it("takes Stripe's three keys together or not at all, without echoing them", () => {
    let message = "";
    try {
      readStackConfig({ STRIPE_SECRET_KEY: "sk_test_secretvalue" });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/STRIPE_SECRET_KEY, STRIPE_PUBLISHABLE_KEY and STRIPE_WEBHOOK_SECRET together/);
    expect(message).not.toContain("secretvalue");
    expect(() =>
      readStackConfig({
        STRIPE_SECRET_KEY: "not-a-key",
        STRIPE_PUBLISHABLE_KEY: "pk_1",
        STRIPE_WEBHOOK_SECRET: "whsec_1",
      }),
    ).toThrow(/STRIPE_SECRET_KEY/);
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
