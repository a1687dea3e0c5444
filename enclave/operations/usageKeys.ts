// Usage keys: created in the enclave (the value is shown once), scoped and removed by the owner.
import { keccak256, toBytes } from "viem";
import { newApiKey } from "../../shared/apiKey.ts";
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { permissionArgs } from "../../shared/permissions.ts";
import { usageKeyHashOf, type Enclave, type RequestContext } from "./context.ts";
import { managedWrite, writeAsCaller } from "./write.ts";
import { guardrailText } from "./wallets.ts";

type Permissions = ParsedEnclaveRequest<"add_usage_api_key">;

function setUsageKeyArgs(accountHash: bigint, usageKeyHash: bigint, p: Omit<Permissions, "api_key">) {
  const expiration = BigInt(p.expires_at ?? 0);
  if (expiration !== 0n && expiration <= BigInt(Math.floor(Date.now() / 1000))) {
    throw new SigilError("invalid_request", "expires_at must be in the future", {
      details: [{ path: "expires_at", message: "must be in the future" }],
    });
  }
  return [
    accountHash,
    usageKeyHash,
    expiration,
    BigInt(p.spend_limit_cents ?? 0),
    p.name,
    p.description,
    ...permissionArgs(p),
  ] as const;
}

export async function addUsageApiKey(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"add_usage_api_key">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"add_usage_api_key">> {
  const { apiKey: usageKey, hash: usageHash } = newApiKey();
  const { response } = await writeAsCaller(
    enclave,
    input.api_key,
    ctx,
    ({ keyHash }) => ({ functionName: "setUsageApiKey", args: setUsageKeyArgs(keyHash, usageHash, input) }),
    { owner: true },
  );
  return { ...response, usage_api_key: usageKey };
}

export const updateUsageApiKey = managedWrite<"update_usage_api_key">({
  owner: true,
  call: async (input, { keyHash, resolution }, enclave) => {
    const usageHash = usageKeyHashOf(input.usage_api_key);
    await requireUsageKeyOf(enclave, resolution.master, usageHash);
    return { functionName: "setUsageApiKey", args: setUsageKeyArgs(keyHash, usageHash, input) };
  },
});

export const updateUsageApiKeyMetadata = managedWrite<"update_usage_api_key_metadata">({
  owner: true,
  call: (input, { keyHash }) => ({
    functionName: "updateUsageApiKeyMetadata",
    args: [keyHash, usageKeyHashOf(input.usage_api_key), input.name, input.description],
  }),
});

export const removeUsageApiKey = managedWrite<"remove_usage_api_key">({
  owner: true,
  call: (input, { keyHash }) => ({
    functionName: "removeUsageApiKey",
    args: [keyHash, usageKeyHashOf(input.usage_api_key)],
  }),
});

/**
 * `set_usage_key_guardrail`: the key's own guardrail (docs/design/guardrails.md, Narrowed per usage
 * key), kept on chain as a wallet's is, as the canonical JSON of the document.
 */
export const setUsageKeyGuardrail = managedWrite<"set_usage_key_guardrail">({
  owner: true,
  call: async (input, { keyHash }, enclave) => {
    const usageHash = usageKeyHashOf(input.usage_api_key);
    const { value } = await enclave.cache.resolve(keyHash);
    await requireUsageKeyOf(enclave, value.master, usageHash);
    return { functionName: "setUsageKeyGuardrail", args: [keyHash, usageHash, guardrailText(input.guardrail)] };
  },
  answer: ({ response }, input) => ({
    ...response,
    guardrail_hash: input.guardrail === null ? null : keccak256(toBytes(guardrailText(input.guardrail))),
  }),
});

/**
 * `update_usage_api_key` replaces a key's permissions; on chain, setting an unknown hash would
 * create a key nobody holds, so the update insists the key already belongs to the account.
 */
async function requireUsageKeyOf(enclave: Enclave, master: bigint, usageHash: bigint): Promise<void> {
  const { value } = await enclave.cache.resolve(usageHash);
  if (value.master !== master || value.isMaster) {
    throw new SigilError("not_found", "no usage key with that value or hash exists on this account");
  }
}
