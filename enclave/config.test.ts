// The enclave's configuration: required variables, defaults, the production guards on the dev root
// key provider and the simulated attestation source, the fetch allow/deny lists, and errors that
// name a variable but never echo a value.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { ENCLAVE_PROCESS, readEnclaveConfig } from "./config.ts";

const EDGE_KEY_HEX = "ab".repeat(32);
const REQUIRED = {
  SIGIL_ALLOWED_EDGE_KEYS: EDGE_KEY_HEX,
  SIGIL_RPC_URL: "http://127.0.0.1:8545",
  SIGIL_CONTRACT_ADDRESS: `0x${"ab".repeat(20)}`,
} as const;

const read = (extra: Record<string, string | undefined> = {}) => readEnclaveConfig({ ...REQUIRED, ...extra });

function errorOf(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected readEnclaveConfig to throw");
}

describe("readEnclaveConfig: required variables", () => {
  it("accepts an environment with only the required variables", () => {
    const c = read();
    expect(c.allowedEdgeKeys).toEqual([Uint8Array.from(Buffer.from(EDGE_KEY_HEX, "hex"))]);
    expect(c.rpcUrl).toBe(REQUIRED.SIGIL_RPC_URL);
    expect(c.contractAddress).toBe(REQUIRED.SIGIL_CONTRACT_ADDRESS);
  });

  it("names every missing required variable in one error", () => {
    const msg = errorOf(() => readEnclaveConfig({})).message;
    expect(msg).toMatch(/^invalid enclave configuration/);
    for (const name of Object.keys(REQUIRED)) expect(msg).toContain(name);
  });

  it.each(Object.keys(REQUIRED))("refuses an environment without %s, naming it", (name) => {
    const msg = errorOf(() => read({ [name]: undefined })).message;
    expect(msg).toContain(name);
    for (const other of Object.keys(REQUIRED).filter((n) => n !== name)) expect(msg).not.toContain(other);
  });

  it("reads the allowed edge keys, hex or base64url, comma-separated; refuses none or a malformed one", () => {
    const b64 = Buffer.from("cd".repeat(32), "hex").toString("base64url");
    const keys = read({ SIGIL_ALLOWED_EDGE_KEYS: `0x${EDGE_KEY_HEX}, ${b64}` }).allowedEdgeKeys;
    expect(keys.map((k) => Buffer.from(k).toString("hex"))).toEqual([EDGE_KEY_HEX, "cd".repeat(32)]);
    expect(() => read({ SIGIL_ALLOWED_EDGE_KEYS: " , " })).toThrow(/SIGIL_ALLOWED_EDGE_KEYS/);
    expect(() => read({ SIGIL_ALLOWED_EDGE_KEYS: "abcd" })).toThrow(/SIGIL_ALLOWED_EDGE_KEYS/);
  });

  it("refuses a non-http(s) RPC URL and a malformed contract address", () => {
    expect(() => read({ SIGIL_RPC_URL: "ws://127.0.0.1:8545" })).toThrow(/SIGIL_RPC_URL/);
    expect(() => read({ SIGIL_CONTRACT_ADDRESS: "0x1234" })).toThrow(/SIGIL_CONTRACT_ADDRESS/);
  });
});

describe("readEnclaveConfig: defaults", () => {
  it("defaults to development on 127.0.0.1:8790 with the dev root key provider under the state directory", () => {
    const c = read();
    expect(c.env).toBe("development");
    expect(c.host).toBe("127.0.0.1");
    expect(c.port).toBe(8790);
    expect(c.rootKey.provider).toBe("dev");
    if (c.rootKey.provider === "dev") {
      expect(c.rootKey.fixedKey).toBeUndefined();
      expect(c.rootKey.stateDir).toMatch(/\.sigil$/);
    }
    expect(c.listenerMaxRange).toBe(2_000);
    expect(c.listenerReorgDepth).toBe(3);
    expect(c.ipfsGateway).toBe("https://ipfs.io");
    expect(c.ipfsTimeoutMs).toBe(30_000);
    expect(c.limits.timeoutMs).toBe(60_000);
    expect(c.limits.memoryLimitBytes).toBe(64 << 20);
  });

  it("polls the chain every 1000 ms in development and test", () => {
    expect(read().listenerPollMs).toBe(1_000);
    expect(read({ SIGIL_ENV: "test" }).listenerPollMs).toBe(1_000);
  });

  it("polls the chain every 10000 ms in production", () => {
    expect(read({ SIGIL_ENV: "production", SIGIL_ROOT_KEY_PROVIDER: "dstack" }).listenerPollMs).toBe(10_000);
  });

  it("takes an explicit SIGIL_LISTENER_POLL_MS over either default", () => {
    expect(read({ SIGIL_LISTENER_POLL_MS: "250" }).listenerPollMs).toBe(250);
    expect(
      read({ SIGIL_ENV: "production", SIGIL_ROOT_KEY_PROVIDER: "dstack", SIGIL_LISTENER_POLL_MS: "250" })
        .listenerPollMs,
    ).toBe(250);
    expect(() => read({ SIGIL_LISTENER_POLL_MS: "50" })).toThrow(/SIGIL_LISTENER_POLL_MS/);
  });

  it("strips trailing slashes from the IPFS gateway", () => {
    expect(read({ SIGIL_IPFS_GATEWAY: "http://127.0.0.1:9999//" }).ipfsGateway).toBe("http://127.0.0.1:9999");
  });

  it("refuses a default timeout above the maximum timeout", () => {
    expect(() => read({ SIGIL_TIMEOUT_MS: "2000", SIGIL_MAX_TIMEOUT_MS: "1000" })).toThrow(/SIGIL_TIMEOUT_MS/);
  });
});

describe("readEnclaveConfig: root key provider", () => {
  it("refuses the dev provider when SIGIL_ENV=production (also by default)", () => {
    expect(() => read({ SIGIL_ENV: "production" })).toThrow(/dev root key provider is refused/);
    expect(() => read({ SIGIL_ENV: "production", SIGIL_ROOT_KEY_PROVIDER: "dev" })).toThrow(
      /dev root key provider is refused/,
    );
    expect(() =>
      read({ SIGIL_ENV: "production", SIGIL_ROOT_KEY_PROVIDER: "dev", SIGIL_DEV_ROOT_KEY: `0x${"11".repeat(32)}` }),
    ).toThrow(/dev root key provider is refused/);
  });

  it("accepts the dstack provider in production, with the simulator endpoint when given", () => {
    const c = read({
      SIGIL_ENV: "production",
      SIGIL_ROOT_KEY_PROVIDER: "dstack",
      DSTACK_SIMULATOR_ENDPOINT: "http://127.0.0.1:8090",
    });
    expect(c.rootKey).toEqual({ provider: "dstack", endpoint: "http://127.0.0.1:8090" });
    expect(read({ SIGIL_ROOT_KEY_PROVIDER: "dstack" }).rootKey).toEqual({ provider: "dstack", endpoint: undefined });
  });

  it("passes a fixed dev root key and the state directory to the dev provider", () => {
    const key = `0x${"11".repeat(32)}`;
    expect(read({ SIGIL_DEV_ROOT_KEY: key, SIGIL_STATE_DIR: "/tmp/sigil-state" }).rootKey).toEqual({
      provider: "dev",
      fixedKey: key,
      stateDir: "/tmp/sigil-state",
    });
  });

  it("refuses a fixed dev root key that is not 0x + 64 hex digits", () => {
    expect(() => read({ SIGIL_DEV_ROOT_KEY: `0x${"11".repeat(31)}` })).toThrow(/SIGIL_DEV_ROOT_KEY/);
    expect(() => read({ SIGIL_DEV_ROOT_KEY: "11".repeat(32) })).toThrow(/SIGIL_DEV_ROOT_KEY/);
  });
});

describe("readEnclaveConfig: attestation source", () => {
  it("defaults to the simulated TEE in development and test, measuring the default app-compose", () => {
    expect(read().attestation).toEqual({ source: "simulated", appComposeFile: undefined });
    expect(read({ SIGIL_ENV: "test" }).attestation).toEqual({ source: "simulated", appComposeFile: undefined });
  });

  it("passes SIGIL_APP_COMPOSE_FILE to the simulated TEE", () => {
    expect(read({ SIGIL_APP_COMPOSE_FILE: "/tmp/compose.json" }).attestation).toEqual({
      source: "simulated",
      appComposeFile: "/tmp/compose.json",
    });
  });

  it("defaults to dstack in production, on the socket or the simulator endpoint when given", () => {
    const prod = { SIGIL_ENV: "production", SIGIL_ROOT_KEY_PROVIDER: "dstack" };
    expect(read(prod).attestation).toEqual({ source: "dstack", endpoint: undefined });
    expect(read({ ...prod, DSTACK_SIMULATOR_ENDPOINT: "http://127.0.0.1:8090" }).attestation).toEqual({
      source: "dstack",
      endpoint: "http://127.0.0.1:8090",
    });
  });

  it("refuses SIGIL_ATTESTATION=simulated when SIGIL_ENV=production", () => {
    expect(() =>
      read({ SIGIL_ENV: "production", SIGIL_ROOT_KEY_PROVIDER: "dstack", SIGIL_ATTESTATION: "simulated" }),
    ).toThrow(/SIGIL_ATTESTATION=simulated is refused when SIGIL_ENV=production/);
  });

  it("takes SIGIL_ATTESTATION=dstack in development (a guest-agent simulator)", () => {
    expect(
      read({ SIGIL_ATTESTATION: "dstack", DSTACK_SIMULATOR_ENDPOINT: "http://127.0.0.1:8090" }).attestation,
    ).toEqual({
      source: "dstack",
      endpoint: "http://127.0.0.1:8090",
    });
  });
});

describe("readEnclaveConfig: fetch allow and deny lists", () => {
  it("is empty by default", () => {
    expect([...read().fetchAllow]).toEqual([]);
  });

  it("parses comma-separated host:port entries, trimmed and lowercased, skipping empty ones", () => {
    const c = read({ SIGIL_FETCH_ALLOW: " 127.0.0.1:8080, Example.TEST:443,,[::1]:9000 ," });
    expect([...c.fetchAllow].sort()).toEqual(["127.0.0.1:8080", "[::1]:9000", "example.test:443"]);
  });

  it.each([
    ["a host without a port", "127.0.0.1"],
    ["a URL", "http://127.0.0.1:8080"],
    ["a port without a host", ":8080"],
    ["a path", "example.test:80/x"],
    ["an over-long port", "example.test:123456"],
    ["a wildcard", "*:80"],
  ])("refuses %s in SIGIL_FETCH_ALLOW, naming the variable", (_label, entry) => {
    expect(() => read({ SIGIL_FETCH_ALLOW: `127.0.0.1:1,${entry}` })).toThrow(/SIGIL_FETCH_ALLOW/);
  });

  it("denies the edge's port 8787 by default and always adds the enclave's own port", () => {
    expect([...read().fetchDenyPorts].sort()).toEqual([8787, 8790]);
    expect([...read({ SIGIL_ENCLAVE_PORT: "9100" }).fetchDenyPorts].sort()).toEqual([8787, 9100]);
    expect(
      [...read({ SIGIL_ENCLAVE_PORT: "9100", SIGIL_FETCH_DENY_PORTS: "1234, 5678" }).fetchDenyPorts].sort(),
    ).toEqual([1234, 5678, 9100]);
  });

  it("adds no port 0 when the enclave port is chosen at listen time", () => {
    expect([...read({ SIGIL_ENCLAVE_PORT: "0" }).fetchDenyPorts]).toEqual([8787]);
  });

  it.each(["0", "65536", "http", "80.5"])("refuses deny port %s, naming the variable", (port) => {
    expect(() => read({ SIGIL_FETCH_DENY_PORTS: `8787,${port}` })).toThrow(/SIGIL_FETCH_DENY_PORTS/);
  });
});

describe("readEnclaveConfig: errors never echo a value", () => {
  const SENTINEL = "Zq9SENTINELzq9";
  it.each([
    ["SIGIL_ALLOWED_EDGE_KEYS", `${SENTINEL}-short`],
    ["SIGIL_DEV_ROOT_KEY", `0x${SENTINEL}${"a".repeat(50)}`],
    ["SIGIL_DEV_ROOT_KEY", `${SENTINEL}`],
    ["SIGIL_RPC_URL", `ftp://user:${SENTINEL}@rpc.example`],
    ["SIGIL_RPC_URL", `${SENTINEL}`],
    ["SIGIL_CONTRACT_ADDRESS", `0x${SENTINEL}`],
    ["SIGIL_ENV", SENTINEL],
    ["SIGIL_ROOT_KEY_PROVIDER", SENTINEL],
    ["SIGIL_ATTESTATION", SENTINEL],
    ["SIGIL_ENCLAVE_PORT", SENTINEL],
    ["SIGIL_PAYER_MIN_BALANCE_WEI", SENTINEL],
    ["SIGIL_IPFS_GATEWAY", SENTINEL],
    ["SIGIL_LOG_LEVEL", SENTINEL],
  ])("names %s but does not echo its bad value", (name, value) => {
    const msg = errorOf(() => read({ [name]: value })).message;
    expect(msg).toContain(name);
    expect(msg.toLowerCase()).not.toContain(SENTINEL.toLowerCase());
  });

  it("does not echo the (valid) dev root key when another variable is bad", () => {
    const key = `0x${"5e".repeat(32)}`;
    const msg = errorOf(() => read({ SIGIL_DEV_ROOT_KEY: key, SIGIL_RPC_URL: "nope" })).message;
    expect(msg).not.toContain("5e5e5e");
  });
});

describe("how the enclave's process is started (ENCLAVE_PROCESS)", () => {
  it("is the same in enclave/Dockerfile as in bin/stack/enclave.ts: the node flags before the script, the environment", () => {
    const dockerfile = readFileSync(new URL("./Dockerfile", import.meta.url), "utf8");
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1] ?? "[]") as string[];
    expect(entrypoint).toEqual(["node", ...ENCLAVE_PROCESS.nodeFlags, "enclave/main.ts"]);
    for (const [name, value] of Object.entries(ENCLAVE_PROCESS.env))
      expect(dockerfile).toMatch(new RegExp(`^\\s+${name}=${value}\\b`, "m"));
  });
});
