// toSigilAccount: a viem Account whose key never leaves the enclave. Each signature is a run of
// the SDK's signing action (SIGNER_CODE, src/signer.ts) with the wallet, so
// `createWalletClient({ account: toSigilAccount(…) })` signs messages, typed data and transactions
// (and sends them) with a Sigil wallet. The calling key must be allowed to run that action with the
// wallet: a group with SIGNER_CID and the wallet (grantSigner makes one).
import { toAccount } from "viem/accounts";
import {
  getAddress,
  serializeTransaction,
  type Address,
  type Hex,
  type LocalAccount,
  type SignableMessage,
  type TransactionSerializable,
} from "viem";
import { SigilError } from "./errors.ts";
import { SIGNER_CID } from "./generated/api.ts";
import { SIGNER_CODE } from "./signer.ts";
import type { CallOptions, SigilClient } from "./client.ts";

export { SIGNER_CID, SIGNER_CODE };

/** Integers beyond JSON's reach travel as `{"$bigint": "…"}`; the enclave's host revives them. */
function toWire(value: unknown): unknown {
  if (typeof value === "bigint") return { $bigint: value.toString() };
  if (value instanceof Uint8Array) return `0x${Array.from(value, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  if (Array.isArray(value)) return value.map(toWire);
  if (value !== null && typeof value === "object")
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, toWire(v)]),
    );
  return value;
}

/** A message as the action takes it: text, or `{raw: "0x…"}` bytes. */
function messageOf(message: SignableMessage): string | { raw: Hex } {
  if (typeof message === "string") return message;
  return { raw: typeof message.raw === "string" ? message.raw : (toWire(message.raw) as Hex) };
}

/**
 * Runs the signing action `code` with `params` and answers its response; a run that fails throws a
 * SigilError with the run's error code (`run_failed` when it has none) and its logs in details.
 */
async function runSigner(
  client: SigilClient,
  code: string,
  params: Record<string, unknown>,
  options: CallOptions | undefined,
): Promise<unknown> {
  let info: { requestId: string | undefined } = { requestId: undefined };
  const run = await client.sigilAction(
    { code, js_params: toWire(params) as Record<string, unknown> },
    {
      ...options,
      onResponse: (r) => {
        info = r;
        options?.onResponse?.(r);
      },
    },
  );
  if (run.has_error) {
    throw new SigilError({
      code: run.error?.code ?? "run_failed",
      message: `the signing action failed: ${run.error?.message ?? "no message"}`,
      status: 200,
      details: { logs: run.logs, cid: run.cid },
      requestId: info.requestId,
    });
  }
  return run.response;
}

/** How long a signature waits, in all, for a grant it just made to reach the enclave's permission cache. */
const GRANT_SETTLE_DELAYS_MS = [100, 200, 400, 800, 1600];

const isDenied = (err: unknown) => err instanceof SigilError && err.code === "permission_denied";

/** A signing action: its code, and how to make the group that lets a key run it with a wallet. */
export type SigningAction = {
  code: string;
  grant: (client: SigilClient, wallet: Address, options: CallOptions | undefined) => Promise<unknown>;
};

/** toSigilAccount's action (SIGNER_CODE). */
const EVM_SIGNER: SigningAction = {
  code: SIGNER_CODE,
  grant: (client, wallet, options) => grantSigner(client, { wallet }, options),
};

/**
 * Signs through the signing action `action`; with `grant`, a first refusal for want of a group makes
 * the group (once per signer object: concurrent first signatures share it) and signs again, waiting
 * out the moments before every enclave instance has seen the new group.
 */
export function signer(
  client: SigilClient,
  wallet: Address,
  options: CallOptions | undefined,
  grant: boolean,
  action: SigningAction = EVM_SIGNER,
) {
  let granted: Promise<unknown> | undefined;
  return async (params: Record<string, unknown>): Promise<unknown> => {
    try {
      return await runSigner(client, action.code, params, options);
    } catch (err) {
      if (!grant || !isDenied(err)) throw err;
    }
    granted ??= action.grant(client, wallet, options).catch((err: unknown) => {
      granted = undefined;
      throw err;
    });
    const group = (await granted) as { group_id?: string };
    for (const delay of [...GRANT_SETTLE_DELAYS_MS, undefined]) {
      try {
        return await runSigner(client, action.code, params, options);
      } catch (err) {
        if (!isDenied(err)) throw err;
        if (delay === undefined) {
          const e = err as SigilError;
          throw new SigilError({
            code: e.code,
            status: e.status,
            message: `group ${group.group_id ?? "?"} lets the signing action use ${wallet}, and this key still may not run it: a usage key runs only in the groups it is given (execute_in_groups)`,
            details: e.details,
            requestId: e.requestId,
          });
        }
        await new Promise((r) => setTimeout(r, delay));
      }
    }
    throw new Error("unreachable");
  };
}

/**
 * A viem LocalAccount backed by the Sigil wallet `wallet`: signMessage, signTypedData,
 * signTransaction and sign (a raw 32-byte hash) each run inside the enclave. `options` apply to
 * every run (an AbortSignal, a timeout). With `grant: true`, the first signature refused because
 * no group lets the client's key use the wallet with the signing action makes that group
 * (`grantSigner`; the key needs group:create) and signs again: no separate setup step.
 */
export function toSigilAccount(args: {
  client: SigilClient;
  wallet: Address | string;
  options?: CallOptions;
  grant?: boolean;
}): LocalAccount<"sigil"> {
  const { client, options } = args;
  const wallet = getAddress(args.wallet);
  const sign = signer(client, wallet, options, args.grant === true);
  const account = toAccount({
    address: wallet,
    async sign({ hash }) {
      return (await sign({ op: "sign", wallet, hash })) as Hex;
    },
    async signMessage({ message }) {
      return (await sign({ op: "signMessage", wallet, message: messageOf(message) })) as Hex;
    },
    async signTypedData(typedData) {
      return (await sign({ op: "signTypedData", wallet, typedData })) as Hex;
    },
    async signTransaction(transaction, opts) {
      // A chain with its own serializer (an OP stack deposit, say) cannot be signed by the action,
      // which serializes as Ethereum does: say so rather than sign something else.
      if (opts?.serializer && opts.serializer !== serializeTransaction) {
        const theirs = await opts.serializer(transaction as TransactionSerializable);
        if (theirs !== serializeTransaction(transaction as TransactionSerializable)) {
          throw new TypeError(
            "this chain serializes this transaction its own way; the Sigil signer signs Ethereum's serialization only",
          );
        }
      }
      return (await sign({ op: "signTransaction", wallet, transaction })) as Hex;
    },
  });
  return { ...account, source: "sigil" } as LocalAccount<"sigil">;
}

/**
 * Lets the client's key sign with `wallet` through toSigilAccount: adds a group with the signing
 * action's CID and the wallet (add_group; the key needs group:create). Resolves with the new group.
 */
export async function grantSigner(
  client: SigilClient,
  args: { wallet: Address | string; groupName?: string; description?: string },
  options?: CallOptions,
) {
  return client.addGroup(
    {
      group_name: args.groupName ?? `sigil signer ${args.wallet.slice(0, 10)}`,
      group_description: args.description ?? "lets toSigilAccount sign with this wallet (@sigil/sdk signing action)",
      pkp_ids_permitted: [args.wallet],
      cid_hashes_permitted: [SIGNER_CID],
    },
    options,
  );
}
