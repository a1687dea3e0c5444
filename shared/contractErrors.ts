// Turns a failed AccountConfig call into the error a client sees (docs/design/api.md). The revert data and
// RPC details never reach the client; `internal` tells the caller to log the original error.
import {
  BaseError,
  ContractFunctionRevertedError,
  HttpRequestError,
  RpcRequestError,
  TimeoutError,
  WebSocketRequestError,
} from "viem";
import { SigilError } from "./errors.ts";

export type MappedContractError = { error: SigilError; internal: boolean };

/**
 * Maps a viem error from a read, a simulation or a write on behalf of the key `keyHash`.
 * Reverts become 4xx codes; an unreachable chain becomes 503 `chain_unavailable`; anything else is
 * an internal error.
 */
export function mapContractError(err: unknown, context: { keyHash?: bigint } = {}): MappedContractError {
  const revert = findRevert(err);
  if (revert) {
    const mapped = mapRevert(revert.name, revert.args, context);
    if (mapped) return { error: mapped, internal: false };
    return {
      error: new SigilError("internal_error", "the contract refused the request for an unexpected reason"),
      internal: true,
    };
  }
  if (isChainUnreachable(err)) {
    return {
      error: new SigilError("chain_unavailable", "the chain could not be reached; try again shortly", {
        retryAfterSeconds: 5,
      }),
      internal: true,
    };
  }
  return { error: new SigilError("internal_error", "an internal error occurred"), internal: true };
}

/** The decoded custom error of a revert, when the error is one. */
export function findRevert(err: unknown): { name: string; args: readonly unknown[] } | undefined {
  if (!(err instanceof BaseError)) return undefined;
  const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError);
  if (!(reverted instanceof ContractFunctionRevertedError)) return undefined;
  const name = reverted.data?.errorName;
  if (name) return { name, args: reverted.data?.args ?? [] };
  return { name: reverted.reason ? "Error" : "Unknown", args: reverted.reason ? [reverted.reason] : [] };
}

function isChainUnreachable(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return Boolean(
    err.walk(
      (e) =>
        e instanceof HttpRequestError ||
        e instanceof TimeoutError ||
        e instanceof WebSocketRequestError ||
        (e instanceof RpcRequestError && (e.code === -32603 || e.code === -32005)),
    ),
  );
}

function mapRevert(name: string, args: readonly unknown[], context: { keyHash?: bigint }): SigilError | undefined {
  const first = args[0];
  switch (name) {
    case "AccountDoesNotExist":
      // The caller's own key does not resolve; any other hash is the usage key being managed.
      if (context.keyHash === undefined || first === context.keyHash) {
        return new SigilError("invalid_api_key", "the API key is not valid");
      }
      return new SigilError("not_found", "no usage key with that value or hash exists on this account");
    case "KeyExpired":
      return new SigilError("invalid_api_key", "the API key has expired");
    case "NoAccountAccess":
      return new SigilError(
        "chain_secured_account",
        "this account is ChainSecured: the change must be sent on chain by its admin wallet",
      );
    case "NotOwner":
      return new SigilError("account_key_required", "this operation needs the account's master key, not a usage key");
    case "NotAllowed": {
      const scope = String(first);
      const groupId = typeof args[1] === "bigint" ? args[1] : 0n;
      return new SigilError(
        "permission_denied",
        `the API key lacks the ${scope} permission${groupId === 0n ? "" : ` for group ${groupId}`}`,
        {
          details: { scope, group_id: groupId.toString() },
        },
      );
    }
    case "GroupDoesNotExist":
      return new SigilError("group_not_found", `group ${String(first)} does not exist`);
    case "ActionDoesNotExist":
      return new SigilError("action_not_found", "the action is not registered with this account or group");
    case "WalletNotRegistered":
      return new SigilError(
        "wallet_not_found",
        `wallet ${String(first).toLowerCase()} is not registered to this account`,
      );
    case "WalletAlreadyRegistered":
      return new SigilError("already_exists", `wallet ${String(first).toLowerCase()} is already registered`);
    case "AccountAlreadyExists":
      return new SigilError("already_exists", "that account or admin wallet already exists");
    case "InvalidRequest": {
      const reason = String(first);
      if (reason === "wallet is not in the group")
        return new SigilError("wallet_not_found", "the wallet is not in the group");
      return new SigilError("invalid_request", reason);
    }
    case "LimitExceeded":
      return new SigilError("invalid_request", `too many ${String(first)}: the limit is ${String(args[1])}`);
    default:
      return undefined;
  }
}
