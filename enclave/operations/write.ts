// One managed write on behalf of a caller: submitted by the payer pool, then the account's cached
// permissions are dropped before the answer goes back (keys-and-authz.md).
import type { Hex } from "viem";
import type { WriteCall, WriteFunction, WriteResult } from "../payers/pool.ts";
import type { Enclave, RequestContext } from "./context.ts";

export async function submitWrite<F extends WriteFunction>(
  enclave: Enclave,
  call: WriteCall<F>,
  ctx: RequestContext,
  scope: { keyHash?: bigint; master: bigint },
): Promise<WriteResult & { response: { success: true; transaction_hash: Hex } }> {
  try {
    const result = await enclave.payers.write(call, {
      log: ctx.log,
      ...(scope.keyHash === undefined ? {} : { keyHash: scope.keyHash }),
    });
    return { ...result, response: { success: true, transaction_hash: result.transactionHash } };
  } finally {
    // Also on failure: a write that timed out waiting for its receipt may still land.
    enclave.cache.invalidateMaster(scope.master);
  }
}
