// Actions: the scripts an account registers by their CIDs (made canonical by the request schema),
// kept by the hash of the CIDv0 with a name and a description; the contract decides who may change
// them.
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import type { Enclave, RequestContext } from "./context.ts";
import { writeAsCaller } from "./write.ts";

type Write = EnclaveResponse<"delete_action">;

export async function addAction(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"add_action">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"add_action">> {
  const cid = input.action_ipfs_cid;
  const hash = cidHash(cid);
  const { response } = await writeAsCaller(enclave, input.api_key, ctx, ({ keyHash }) => ({
    functionName: "addAction",
    args: [keyHash, hash, cid, input.name, input.description],
  }));
  return { ...response, hashed_cid: toHash32(hash) };
}

export async function deleteAction(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"delete_action">,
  ctx: RequestContext,
): Promise<Write> {
  const write = await writeAsCaller(enclave, input.api_key, ctx, ({ keyHash }) => ({
    functionName: "removeAction",
    args: [keyHash, BigInt(input.hashed_cid)],
  }));
  return write.response;
}

export async function updateActionMetadata(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"update_action_metadata">,
  ctx: RequestContext,
): Promise<Write> {
  const write = await writeAsCaller(enclave, input.api_key, ctx, ({ keyHash }) => ({
    functionName: "updateActionMetadata",
    args: [keyHash, BigInt(input.hashed_cid), input.name, input.description],
  }));
  return write.response;
}
