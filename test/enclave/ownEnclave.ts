// A second enclave process for the suites that need one configured differently from the shared
// stack's (other limits, debug logs captured): the same anvil, contract, root key and edge identity,
// its own payer range (`SIGIL_INSTANCE_INDEX`), reached through the attested channel like the first.
import { createPublicClient, createWalletClient, http } from "viem";
import { inject } from "vitest";
import { spawnEnclave, type EnclaveProcess } from "../../bin/stack/enclave.ts";
import { registerLocalPayers } from "../../bin/stack/payers.ts";
import { edgeIdentityFromSeed, toBase64Url } from "../../shared/channel/channel.ts";
import type { EnclaveOperation } from "../../shared/operations.ts";
import { callOperation, type Reply } from "../harness/channel.ts";
import { TEST_EDGE_IDENTITY_SEED, TEST_ROOT_KEY } from "./constants.ts";

/**
 * Starts an enclave on a free port. Its payers are registered and funded only when it is to write
 * (`registerPayers`); one that only executes reads accounts made through the shared enclave.
 */
export async function startOwnEnclave(options: {
  instanceIndex: number;
  env?: Record<string, string>;
  registerPayers?: boolean;
}): Promise<EnclaveProcess> {
  const enclave = await spawnEnclave({
    SIGIL_ENV: "test",
    SIGIL_ENCLAVE_PORT: "0",
    SIGIL_ALLOWED_EDGE_KEYS: toBase64Url((await edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED)).publicKey),
    SIGIL_RPC_URL: inject("rpcUrl"),
    SIGIL_CONTRACT_ADDRESS: inject("contract"),
    SIGIL_DEV_ROOT_KEY: TEST_ROOT_KEY,
    SIGIL_INSTANCE_INDEX: String(options.instanceIndex),
    SIGIL_SANDBOX_WORKERS: "1",
    SIGIL_LOG_LEVEL: "warn",
    ...options.env,
  });
  if (options.registerPayers) {
    try {
      const transport = http(inject("rpcUrl"));
      await registerLocalPayers({
        rpcUrl: inject("rpcUrl"),
        publicClient: createPublicClient({ transport, pollingInterval: 50 }),
        walletClient: createWalletClient({ transport }),
        owner: inject("owner"),
        contract: inject("contract"),
        payers: enclave.payers,
      });
    } catch (err) {
      await enclave.stop();
      throw err;
    }
  }
  return enclave;
}

/** `callEnclave` of client.ts, against the given enclave. */
export function callAt<T = Record<string, unknown>>(
  base: string,
  op: EnclaveOperation,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply<T>> {
  return callOperation<T>(base, op, body, headers);
}

/** Calls and insists on 200, showing the error body otherwise. */
export async function okAt<T = Record<string, unknown>>(base: string, op: EnclaveOperation, body: unknown): Promise<T> {
  const r = await callAt<T>(base, op, body);
  if (r.status !== 200) throw new Error(`${op} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}
