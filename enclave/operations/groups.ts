// Groups: which wallets which code may use. Raw CIDs (made canonical by the request
// schema) are hashed here; wallet ids are turned into addresses; the contract decides who may
// change what.
import { encodeFunctionData } from "viem";
import { SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import type { WriteCall, WriteFunction } from "../payers/pool.ts";
import { toCidHash, toWalletAddress, type Enclave } from "./context.ts";
import { managedWrite } from "./write.ts";

/**
 * `call`, a write to group `groupId` (0: the group it creates), preceded in the same transaction by
 * registering the raw CIDs it lists: a group lists only actions its account registered, and a
 * client that names an action by its raw CID need not have registered it. `registerActions` leaves
 * registered ones (and their names) as they are, and needs, and refuses, as the group write does.
 */
function registeringCids<F extends WriteFunction>(
  keyHash: bigint,
  groupId: bigint,
  cids: readonly string[],
  call: WriteCall<F>,
): WriteCall {
  if (cids.length === 0) return call as WriteCall;
  const register = encodeFunctionData({
    abi: accountConfigAbi,
    functionName: "registerActions",
    args: [keyHash, groupId, [...new Set(cids)]],
  });
  const write = encodeFunctionData({ abi: accountConfigAbi, ...call } as never);
  return { functionName: "multicall", args: [[register, write]] };
}

/** An entry of `cid_hashes_permitted`: `0` (any action) or a `0x` hash as it is, a raw CID (canonical already) hashed and kept for registering. */
function cidEntry(value: string | number): { hash: bigint; cid?: string } {
  if (value === 0 || value === "0" || (typeof value === "string" && /^0x[0-9a-fA-F]{64}$/.test(value)))
    return { hash: toCidHash(value) };
  const cid = String(value);
  return { hash: cidHash(cid), cid };
}

async function groupMembers(
  enclave: Enclave,
  keyHash: bigint,
  input: { pkp_ids_permitted: readonly (string | number)[]; cid_hashes_permitted: readonly (string | number)[] },
) {
  const wallets = await Promise.all(
    input.pkp_ids_permitted.map((id, i) => toWalletAddress(enclave, keyHash, id, `pkp_ids_permitted.${i}`)),
  );
  const entries = input.cid_hashes_permitted.map((c) => cidEntry(c));
  const cids = entries.map((e) => e.hash);
  const raw = entries.flatMap((e) => (e.cid === undefined ? [] : [e.cid]));
  return { wallets, cids, raw };
}

export const addGroup = managedWrite<"add_group">({
  call: async (input, { keyHash }, enclave) => {
    const { wallets, cids, raw } = await groupMembers(enclave, keyHash, input);
    return registeringCids(keyHash, 0n, raw, {
      functionName: "addGroup",
      args: [keyHash, input.group_name, input.group_description, cids, wallets],
    });
  },
  answer: ({ response, events }) => {
    const added = events.find((e) => e.eventName === "GroupAdded");
    if (added?.eventName !== "GroupAdded")
      throw new SigilError("internal_error", "the group id could not be read from the receipt");
    return { ...response, group_id: added.args.groupId.toString() };
  },
});

export const updateGroup = managedWrite<"update_group">({
  call: async (input, { keyHash }, enclave) => {
    const { wallets, cids, raw } = await groupMembers(enclave, keyHash, input);
    return registeringCids(keyHash, input.group_id, raw, {
      functionName: "updateGroup",
      args: [keyHash, input.group_id, input.name, input.description, cids, wallets],
    });
  },
});

export const removeGroup = managedWrite<"remove_group">({
  call: (input, { keyHash }) => ({ functionName: "removeGroup", args: [keyHash, input.group_id] }),
});

export const addActionToGroup = managedWrite<"add_action_to_group">({
  call: (input, { keyHash }) =>
    registeringCids(keyHash, input.group_id, [input.action_ipfs_cid], {
      functionName: "addActionToGroup",
      args: [keyHash, input.group_id, cidHash(input.action_ipfs_cid)],
    }),
  answer: ({ response }, input) => ({ ...response, hashed_cid: toHash32(cidHash(input.action_ipfs_cid)) }),
});

export const removeActionFromGroup = managedWrite<"remove_action_from_group">({
  call: (input, { keyHash }) => ({
    functionName: "removeActionFromGroup",
    args: [keyHash, input.group_id, toCidHash(input.hashed_cid)],
  }),
});

/** A wallet added to or removed from a group: named by its id or address, turned into the account's address. */
const groupWallet = <Op extends "add_pkp_to_group" | "remove_pkp_from_group">(
  functionName: "addPkpToGroup" | "removePkpFromGroup",
) =>
  managedWrite<Op>({
    call: async (input, { keyHash }, enclave) => ({
      functionName,
      args: [keyHash, input.group_id, await toWalletAddress(enclave, keyHash, input.pkp_id, "pkp_id")],
    }),
  });

export const addPkpToGroup = groupWallet<"add_pkp_to_group">("addPkpToGroup");
export const removePkpFromGroup = groupWallet<"remove_pkp_from_group">("removePkpFromGroup");
