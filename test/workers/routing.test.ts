// The edge's enclave client (workers/enclave/client.ts) against the live test enclave: a dead
// enclave in the list is routed around, and a list of dead ones is 503 enclave_unavailable with
// Retry-After. `enclave.call` is called directly, in workerd, as the routes call it.
import { createTestClient, http } from "viem";
import { inject } from "vitest";
import { describe, expect, it } from "vitest";
import { SigilError } from "../../shared/errors.ts";
import { runLimitsSchema } from "../../shared/limits.ts";
import type { EdgeConfig } from "../../workers/config.ts";
import { enclave } from "../../workers/enclave/client.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";

const DEAD = ["http://127.0.0.1:1", "http://127.0.0.1:9"];

function config(enclaveUrls: string[], channel: Partial<EdgeConfig["channel"]> = {}): EdgeConfig {
  return {
    env: "test",
    version: "0.0.0",
    enclaveUrls,
    channel: {
      identityKey: TEST_EDGE_IDENTITY_SEED,
      allowSimulated: true,
      allowedComposeHashes: [],
      pccsUrl: "http://127.0.0.1:1/",
      checkGovernance: false,
      ...channel,
    },
    rpcUrl: inject("rpcUrl"),
    publicRpcUrl: inject("rpcUrl"),
    chainId: 31337,
    chainName: "anvil",
    contractAddress: inject("contract"),
    events: { fromBlock: 0n, windowBlocks: 10_000 },
    rateLimits: { perKey: 1000, perIp: 1000, openPerIp: 1000, openWritesPerHour: 1000 },
    maxInFlight: 0,
    maxInFlightPerClient: 0,
    bodyTimeoutMs: 10_000,
    keyPollMs: 2_000,
    commitDelayMs: 50,
    billing: false,
    limits: runLimitsSchema.parse({}),
    stripe: { secretKey: "", publishableKey: "", webhookSecret: "", apiBase: undefined },
    webhooks: { local: true, retryBaseMs: 10_000 },
    transactions: { chains: new Map(), followMs: 2_000, dropAfterMs: 300_000 },
  };
}

const ids = () => ({ requestId: crypto.randomUUID(), correlationId: null });
const health = (c: EdgeConfig) => enclave.call("health", {}, { config: c, ids: ids(), timeoutMs: 10_000 });

describe("routing across enclaves", () => {
  it("succeeds through the live enclave when the other one is dead, whichever is tried first", async () => {
    const live = inject("enclaveUrl");
    // The list rotates from call to call, so some of these calls try the dead enclave first.
    for (const urls of [
      [DEAD[0] as string, live],
      [live, DEAD[0] as string],
      [...DEAD, live],
    ]) {
      for (let i = 0; i < 3; i++) expect(await health(config(urls))).toMatchObject({ sandbox: expect.any(Object) });
    }
  });

  it("reaches the live enclave's authorization: its own 4xx comes back as it is, not as unavailable", async () => {
    const err = await enclave
      .call("add_usage_api_key", { api_key: "garbage" } as never, {
        config: config([DEAD[0] as string, inject("enclaveUrl")]),
        ids: ids(),
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(SigilError);
    expect((err as SigilError).status).toBeGreaterThanOrEqual(400);
    expect((err as SigilError).status).toBeLessThan(500);
  });

  it("with only dead enclaves, throws SigilError enclave_unavailable (503) with retryAfterSeconds", async () => {
    const err = await health(config(DEAD)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SigilError);
    expect((err as SigilError).code).toBe("enclave_unavailable");
    expect((err as SigilError).status).toBe(503);
    expect((err as SigilError).retryAfterSeconds).toBeGreaterThan(0);
  });
});

describe("the attested channel, from the edge", () => {
  const unavailable = async (c: EdgeConfig) => {
    const err = await health(c).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SigilError);
    expect((err as SigilError).code).toBe("enclave_unavailable");
  };

  it("reaches the enclave when its quote verifies against the mock root and its compose hash is allowed", async () => {
    const info = (await (await fetch(`${inject("enclaveUrl")}/info`)).json()) as { compose_hash: string };
    expect(await health(config([inject("enclaveUrl")], { allowedComposeHashes: [info.compose_hash] }))).toMatchObject({
      sandbox: expect.any(Object),
    });
  });

  it("refuses a simulated enclave unless configured for one", async () => {
    await unavailable(config([inject("enclaveUrl")], { allowSimulated: false }));
  });

  it("refuses an enclave whose compose hash it does not allow", async () => {
    await unavailable(config([inject("enclaveUrl")], { allowedComposeHashes: ["00".repeat(32)] }));
  });

  it("with the governance check on, follows the app's contract: no contract or a refusal keeps it out, an allowing one lets it in", async () => {
    const info = (await (await fetch(`${inject("enclaveUrl")}/info`)).json()) as { app_id: string };
    const app = `0x${info.app_id.replace(/^0x/, "")}` as `0x${string}`;
    const test = createTestClient({ mode: "anvil", transport: http(inject("rpcUrl")) });
    // Each case its own configuration, so no key pinned by another case is reused.
    const governed = (n: number) =>
      config([inject("enclaveUrl")], { checkGovernance: true, pccsUrl: `http://127.0.0.1:${n}/` });
    await test.setCode({ address: app, bytecode: "0x" });
    await unavailable(governed(2));
    // allowedComposeHashes answering false, then true (the smallest contracts that return 0 or 1).
    await test.setCode({ address: app, bytecode: "0x60206000f3" });
    await unavailable(governed(3));
    await test.setCode({ address: app, bytecode: "0x600160005260206000f3" });
    expect(await health(governed(4))).toMatchObject({ sandbox: expect.any(Object) });
    await test.setCode({ address: app, bytecode: "0x" });
  });

  it("is refused by an enclave that does not list its identity", async () => {
    await unavailable(config([inject("enclaveUrl")], { identityKey: "77".repeat(32) }));
  });
});
