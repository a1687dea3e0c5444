// A wallet's native balance on the deployment's chain (the wallet page's balance): one eth_getBalance
// through the edge's chain RPC, at the latest block, with that block's number so the answer says
// when it was true. A failure is the chain's 503, as every read here.
import { formatEther, type Address } from "viem";
import type { EdgeConfig } from "../config.ts";
import { chainClient, read } from "./client.ts";

export type NativeBalance = { wei: bigint; ether: string; blockNumber: bigint };

export async function nativeBalance(config: EdgeConfig, address: Address): Promise<NativeBalance> {
  const client = chainClient(config);
  return read(async () => {
    const blockNumber = await client.getBlockNumber({ cacheTime: 0 });
    const wei = await client.getBalance({ address, blockNumber });
    return { wei, ether: formatEther(wei), blockNumber };
  });
}
