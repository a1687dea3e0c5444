// One managed write on behalf of a caller: submitted by the payer pool, then the account's cached
// permissions are dropped before the answer goes back (docs/design/keys-and-authz.md).
import type { Hex } from "viem";
import { accountsNamedBy } from "../../shared/accountEvents.ts";
import type { EnclaveOperation, EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import type { WriteCall, WriteFunction, WriteResult } from "../payers/pool.ts";
import { callerKey, type CallerKey, type Enclave, type RequestContext } from "./context.ts";

/** What a managed write made with the caller's key answers: the transaction, and its receipt's events. */
export type CallerWrite = WriteResult & { response: { success: true; transaction_hash: Hex } };

/**
 * A managed write made with the caller's raw key (`apiKey`), the shape of every write but the
 * account's creation: the key checked (`owner`: only its account's master key may), then `call`,
 * the contract call for that key (its hash is the call's first argument: the contract decides what
 * the key may change), sent by a payer.
 */
export async function writeAsCaller(
  enclave: Enclave,
  apiKey: string,
  ctx: RequestContext,
  call: (caller: CallerKey) => WriteCall | Promise<WriteCall>,
  options: { owner?: boolean } = {},
): Promise<CallerWrite> {
  const caller = await callerKey(enclave, apiKey, options);
  return submitWrite(enclave, await call(caller), ctx, { keyHash: caller.keyHash, master: caller.resolution.master });
}

/**
 * A managed write operation as one entry: the contract call `call` makes for the parsed input and the
 * caller's key (the key's hash is its first argument: the contract decides what the key may
 * change), `owner` when only the account's master key may make it, and `answer`, what it answers
 * beside the transaction (by default nothing). It is the operation's handler (operations/index.ts).
 */
/** The operations a client makes with an API key (its body carries `api_key`). */
type KeyedOperation = {
  [Op in EnclaveOperation]: ParsedEnclaveRequest<Op> extends { api_key: string } ? Op : never;
}[EnclaveOperation];

export function managedWrite<Op extends KeyedOperation>(spec: {
  owner?: boolean;
  call: (input: ParsedEnclaveRequest<Op>, caller: CallerKey, enclave: Enclave) => WriteCall | Promise<WriteCall>;
  answer?: (write: CallerWrite, input: ParsedEnclaveRequest<Op>) => EnclaveResponse<Op>;
}): (enclave: Enclave, input: ParsedEnclaveRequest<Op>, ctx: RequestContext) => Promise<EnclaveResponse<Op>> {
  return async (enclave, input, ctx) => {
    const write = await writeAsCaller(enclave, input.api_key, ctx, (caller) => spec.call(input, caller, enclave), {
      owner: spec.owner,
    });
    return spec.answer ? spec.answer(write, input) : (write.response as EnclaveResponse<Op>);
  };
}

export async function submitWrite<F extends WriteFunction>(
  enclave: Enclave,
  call: WriteCall<F>,
  ctx: RequestContext,
  scope: { keyHash?: bigint; master: bigint },
): Promise<CallerWrite> {
  // A write that fails drops nothing: refused before it was sent (its simulation, or the chain
  // unreachable — a chain outage refuses every write) it changed nothing; sent, and its receipt did
  // not come, it may still land, and then the chain listener drops what its events changed within its
  // poll, the bound of any change not made through this enclave — its client was told it failed, not
  // that it was done. Dropping the account here instead emptied its cache at every write an outage
  // refused, or cut off, and the account's runs, which the cache serves through an outage, failed
  // with it (the soak of 2026-12-03).
  const result = await enclave.payers.write(call, {
    log: ctx.log,
    ...(scope.keyHash === undefined ? {} : { keyHash: scope.keyHash }),
  });
  // Done: its own events say what it changed, sorted as the listener will sort them when it reads
  // them (shared/accountEvents.ts) — one that only adds drops the account's denials and keeps its
  // grants, a usage key's that key's entries, anything else all of the account — before the answer,
  // so a revocation answered as done is in force at once.
  enclave.cache.applyEvents(accountsNamedBy(result.receipt.logs));
  return { ...result, response: { success: true, transaction_hash: result.transactionHash } };
}
