// Registers an enclave's payer wallets with AccountConfig and funds them, for a local chain: the
// owner adds them to the payer set (keeping the payers already there) and anvil sets balances.
import {
  createTestClient,
  http,
  parseEther,
  type Account,
  type Address,
  type PublicClient,
  type WalletClient,
} from "viem";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";

export async function registerLocalPayers(args: {
  rpcUrl: string;
  publicClient: PublicClient;
  walletClient: WalletClient;
  owner: Account | Address;
  contract: Address;
  payers: readonly Address[];
  fundEther?: string;
}): Promise<void> {
  const { publicClient, walletClient, owner, contract } = args;
  const current = await publicClient.readContract({
    address: contract,
    abi: accountConfigAbi,
    functionName: "apiPayers",
  });
  const known = new Set(current.map((a) => a.toLowerCase()));
  const wanted = [...current, ...args.payers.filter((p) => !known.has(p.toLowerCase()))];
  if (wanted.length !== current.length) {
    const hash = await walletClient.writeContract({
      address: contract,
      abi: accountConfigAbi,
      functionName: "setApiPayers",
      args: [wanted],
      account: owner,
      chain: null,
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== "success") throw new Error("setApiPayers reverted");
  }
  const test = createTestClient({ mode: "anvil", transport: http(args.rpcUrl) });
  const value = parseEther(args.fundEther ?? "1000");
  for (const payer of args.payers) await test.setBalance({ address: payer, value });
}
