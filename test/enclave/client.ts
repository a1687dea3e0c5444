// Calls the enclave's operations from tests as the edge does: through the attested channel
// (test/harness/channel.ts), sealed to the enclave's channel key and signed with the test edge
// identity the enclave allows.
import { createPublicClient, http, type Address } from "viem";
import { inject } from "vitest";
import type { EnclaveOperation } from "../../shared/operations.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { callOperation, type Reply } from "../harness/channel.ts";

export type { Reply } from "../harness/channel.ts";

export function callEnclave<T = Record<string, unknown>>(
  op: EnclaveOperation | string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply<T>> {
  return callOperation<T>(inject("enclaveUrl"), op, body, headers);
}

/** Calls and insists on 200, showing the error body otherwise. */
export async function ok<T = Record<string, unknown>>(op: EnclaveOperation, body: unknown): Promise<T> {
  const r = await callEnclave<T>(op, body);
  if (r.status !== 200) throw new Error(`${op} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

export type RunResult = {
  response: unknown;
  logs: string;
  has_error: boolean;
  error?: { code: string; message: string; stack?: string };
  cid: string;
  duration_ms: number;
};

export async function run(
  apiKey: string,
  code: string,
  params: unknown = null,
  extra: Record<string, unknown> = {},
): Promise<Reply<RunResult>> {
  return callEnclave<RunResult>("sigil_action", { api_key: apiKey, code, js_params: params, ...extra });
}

/** The derivation the contract holds for `wallet` of the account with master hash `masterHash` (0 when none). */
export function walletDerivation(masterHash: bigint, wallet: Address): Promise<bigint> {
  return createPublicClient({ transport: http(inject("rpcUrl")) }).readContract({
    address: inject("contract"),
    abi: accountConfigAbi,
    functionName: "getWalletDerivation",
    args: [masterHash, wallet],
  });
}
