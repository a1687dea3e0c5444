// Live reads of AccountConfig from the Worker (docs/design/api.md: reads are eth_calls, never cached). A
// revert becomes the docs/design/api.md error for it; an unreachable chain 503 chain_unavailable.
import {
  createPublicClient,
  http,
  type ContractFunctionArgs,
  type ContractFunctionName,
  type ContractFunctionReturnType,
  type PublicClient,
} from "viem";
import { mapContractError } from "../../shared/contractErrors.ts";
import { isExposed, SigilError } from "../../shared/errors.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import type { EdgeConfig } from "../config.ts";
import { edgeLog } from "../log.ts";

const clients = new Map<string, PublicClient>();

export function chainClient(config: EdgeConfig): PublicClient {
  if (!config.rpcUrl) throw new SigilError("chain_unavailable", "no chain is configured", { retryAfterSeconds: 30 });
  let client = clients.get(config.rpcUrl);
  if (!client) {
    client = createPublicClient({ transport: http(config.rpcUrl, { retryCount: 1, timeout: 10_000 }) }) as PublicClient;
    clients.set(config.rpcUrl, client);
  }
  return client;
}

const batchedClients = new Map<string, PublicClient>();

/**
 * The same chain through a transport that sends the requests made together as one JSON-RPC batch:
 * for reads that ask many small things at once (the audit log's transactions and blocks).
 */
export function batchedChainClient(config: EdgeConfig): PublicClient {
  if (!config.rpcUrl) throw new SigilError("chain_unavailable", "no chain is configured", { retryAfterSeconds: 30 });
  let client = batchedClients.get(config.rpcUrl);
  if (!client) {
    client = createPublicClient({
      transport: http(config.rpcUrl, { batch: { batchSize: 200 }, retryCount: 1, timeout: 10_000 }),
    }) as PublicClient;
    batchedClients.set(config.rpcUrl, client);
  }
  return client;
}

export function contractAddress(config: EdgeConfig): `0x${string}` {
  if (!config.contractAddress)
    throw new SigilError("chain_unavailable", "no AccountConfig address is configured", { retryAfterSeconds: 30 });
  return config.contractAddress;
}

/** Runs a read on behalf of `keyHash` and maps its failure. */
export async function read<T>(run: () => Promise<T>, keyHash?: bigint): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (isExposed(err)) throw err;
    const { error, internal } = mapContractError(err, keyHash === undefined ? {} : { keyHash });
    if (internal)
      edgeLog.error("chain read failed", { error: err instanceof Error ? err.message.split("\n")[0] : String(err) });
    throw error;
  }
}

type Abi = typeof accountConfigAbi;
type ViewName = ContractFunctionName<Abi, "view" | "pure">;

/** One AccountConfig view, live, on behalf of `keyHash` (which names the key in a mapped revert). */
export function readView<F extends ViewName>(
  config: EdgeConfig,
  functionName: F,
  args: ContractFunctionArgs<Abi, "view" | "pure", F>,
  keyHash?: bigint,
): Promise<ContractFunctionReturnType<Abi, "view" | "pure", F>> {
  return read(
    () =>
      chainClient(config).readContract({
        address: contractAddress(config),
        abi: accountConfigAbi,
        functionName,
        args,
      } as never) as never,
    keyHash,
  );
}
