// Actions: the scripts an account registers by their CIDs (made canonical by the request schema),
// kept by the hash of the CIDv0 with a name and a description; the contract decides who may change
// them.
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import { managedWrite } from "./write.ts";

export const addAction = managedWrite<"add_action">({
  call: (input, { keyHash }) => ({
    functionName: "addAction",
    args: [keyHash, cidHash(input.action_ipfs_cid), input.action_ipfs_cid, input.name, input.description],
  }),
  answer: ({ response }, input) => ({ ...response, hashed_cid: toHash32(cidHash(input.action_ipfs_cid)) }),
});

export const deleteAction = managedWrite<"delete_action">({
  call: (input, { keyHash }) => ({ functionName: "removeAction", args: [keyHash, BigInt(input.hashed_cid)] }),
});

export const updateActionMetadata = managedWrite<"update_action_metadata">({
  call: (input, { keyHash }) => ({
    functionName: "updateActionMetadata",
    args: [keyHash, BigInt(input.hashed_cid), input.name, input.description],
  }),
});
