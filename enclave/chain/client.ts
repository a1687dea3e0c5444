// The enclave's view of the chain: one viem public client on the configured RPC, and the reads the
// execute path needs. Writes go through payers/pool.ts.
import { createPublicClient, defineChain, http, type Address, type Chain, type Hex, type PublicClient } from "viem";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";

export type ChainContext = { client: PublicClient; chain: Chain; contract: Address };

export async function connectChain(
  rpcUrl: string,
  contract: Address,
  pollingIntervalMs = 1_000,
): Promise<ChainContext> {
  // Short retries: a run waits on these reads, and a dead RPC must turn into 503 quickly.
  const transport = http(rpcUrl, { retryCount: 2, retryDelay: 100, timeout: 10_000 });
  const probe = createPublicClient({ transport });
  const chainId = await probe.getChainId();
  const chain = defineChain({
    id: chainId,
    name: `chain ${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const client = createPublicClient({ chain, transport, pollingInterval: pollingIntervalMs }) as PublicClient;
  return { client, chain, contract };
}

export type KeyResolution = {
  master: bigint;
  isMaster: boolean;
  managed: boolean;
  live: boolean;
  /** Unix seconds after which a usage key stops authorizing; 0: never. */
  expiresAt: bigint;
  /** A usage key's own guardrail (docs/design/guardrails.md, Narrowed per usage key): its hash, null for none. */
  guardrail?: Hex | null;
};

export async function resolveKey(chain: ChainContext, keyHash: bigint): Promise<KeyResolution> {
  const { client, contract } = chain;
  const [[master, isMaster, managed, live], expiresAt, [guardrail]] = await Promise.all([
    client.readContract({ address: contract, abi: accountConfigAbi, functionName: "resolveKey", args: [keyHash] }),
    client.readContract({
      address: contract,
      abi: accountConfigAbi,
      functionName: "usageKeyExpiration",
      args: [keyHash],
    }),
    usageKeyGuardrail(chain, keyHash).then((g) => [g.hash] as const),
  ]);
  return { master, isMaster, managed, live, expiresAt, guardrail: BigInt(guardrail) === 0n ? null : guardrail };
}

/** A usage key's own guardrail: its hash and the block whose UsageKeyGuardrailSet holds it ((0, 0): none). */
export async function usageKeyGuardrail(
  { client, contract }: ChainContext,
  keyHash: bigint,
): Promise<{ hash: Hex; block: bigint }> {
  const [hash, block] = await client.readContract({
    address: contract,
    abi: accountConfigAbi,
    functionName: "usageKeyGuardrail",
    args: [keyHash],
  });
  return { hash, block };
}

export async function authorizeExecution(
  { client, contract }: ChainContext,
  keyHash: bigint,
  cidHash: bigint,
  wallets: readonly Address[],
): Promise<{
  canExecute: boolean;
  walletAllowed: readonly boolean[];
  derivations: readonly bigint[];
  guardrails: readonly Hex[];
}> {
  const [canExecute, walletAllowed, derivations, guardrails] = await client.readContract({
    address: contract,
    abi: accountConfigAbi,
    functionName: "authorizeExecution",
    args: [keyHash, cidHash, wallets],
  });
  return { canExecute, walletAllowed, derivations, guardrails };
}

/** Where `wallet`'s guardrail document is (docs/design/guardrails.md): its hash, and the block whose event holds it. */
export async function walletGuardrail(
  { client, contract }: ChainContext,
  master: bigint,
  wallet: Address,
): Promise<{ hash: Hex; block: bigint }> {
  const [hash, block] = await client.readContract({
    address: contract,
    abi: accountConfigAbi,
    functionName: "getWalletGuardrail",
    args: [master, wallet],
  });
  return { hash, block };
}
