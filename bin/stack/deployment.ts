// Which AccountConfig the local stack serves across restarts, and the credit ledgers that go with
// it. The ledgers (the edge's Durable Objects under <state>/wrangler) name accounts by master hash,
// which only means something on the chain those accounts are on: a stack keeps the two together
// or starts both afresh, never one without the other.
//
// local.json records the deployment a run served. The next run keeps it when the chain is the same
// chain (it still holds the random mark the stack left on it), still holds the proxy's code, is
// still owned by this deployer, and the contract's compiled code is what was deployed; else it
// deploys anew and clears the ledgers.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { getAddress, type Address, type Hex, type PublicClient } from "viem";
import { deployContract, loadArtifact, type DeployClients, type Deployment } from "../../contracts/deploy.ts";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";

/** What local.json says about the deployment (besides the URLs of the run). */
export type DeploymentRecord = {
  chainId: number;
  /**
   * A random word the stack wrote into the chain's state when it deployed (markChain): a reloaded
   * anvil still holds it, a fresh one does not. (The genesis block cannot tell them apart: two
   * anvils started within the same second have the same one.)
   */
  chainMark: Hex;
  accountConfig: Address;
  implementation: Address;
  views: Address;
  owner: Address;
  deployedAtBlock: number;
  /** SHA-256 of the compiled contracts it was deployed from. */
  codeHash: string;
  /** Where the enclave anchors its receipts (contracts/ReceiptAnchor.sol); kept while the chain holds its code. */
  receiptAnchor?: Address;
};

/** The compiled contracts a deployment is made from, as one hash. */
export function contractCodeHash(): string {
  const hash = createHash("sha256");
  for (const name of ["AccountConfigViews", "AccountConfig", "AccountConfigProxy"])
    hash.update(loadArtifact(name).bytecode);
  return hash.digest("hex");
}

/** Where the mark lives: storage slot 0 of an address no key controls. */
const MARK_ADDRESS: Address = "0x5151515151515151515151515151515151515151";

/** The chain's mark (zero on a chain the stack never marked). */
export async function chainMark(publicClient: PublicClient): Promise<Hex> {
  return (await publicClient.getStorageAt({ address: MARK_ADDRESS, slot: "0x0" })) ?? "0x";
}

/** Writes a new random mark into the chain's state (anvil's anvil_setStorageAt) and returns it. */
export async function markChain(publicClient: PublicClient): Promise<Hex> {
  const mark = `0x${randomBytes(32).toString("hex")}` as Hex;
  await publicClient.request({ method: "anvil_setStorageAt" as never, params: [MARK_ADDRESS, "0x0", mark] as never });
  return mark;
}

export function recordOf(deployment: Deployment, mark: Hex, codeHash: string): DeploymentRecord {
  return {
    chainId: deployment.chainId,
    chainMark: mark,
    accountConfig: deployment.proxy,
    implementation: deployment.implementation,
    views: deployment.views,
    owner: deployment.owner,
    deployedAtBlock: Number(deployment.blockNumber),
    codeHash,
  };
}

/** The deployment recorded in `localJson`, if any (a missing, older or unreadable file has none). */
export function readRecord(localJson: string): DeploymentRecord | undefined {
  if (!existsSync(localJson)) return undefined;
  try {
    const r = JSON.parse(readFileSync(localJson, "utf8")) as Partial<DeploymentRecord>;
    const fields = [r.chainMark, r.accountConfig, r.implementation, r.views, r.owner, r.codeHash];
    if (
      typeof r.chainId !== "number" ||
      typeof r.deployedAtBlock !== "number" ||
      fields.some((f) => typeof f !== "string")
    )
      return undefined;
    return r as DeploymentRecord;
  } catch {
    return undefined;
  }
}

/**
 * Whether `record` may be served again from the chain at `publicClient`: why not, or undefined when
 * it may.
 */
export async function whyNotKept(
  publicClient: PublicClient,
  record: DeploymentRecord,
  owner: Address,
  codeHash: string,
): Promise<string | undefined> {
  if ((await publicClient.getChainId()) !== record.chainId) return "the chain is another chain";
  if ((await chainMark(publicClient)) !== record.chainMark) return "the chain is a new chain";
  const code = await publicClient.getCode({ address: record.accountConfig });
  if (!code || code === "0x") return "the chain no longer has it";
  if (record.codeHash !== codeHash) return "the contract's code has changed since";
  const current = await publicClient.readContract({
    address: record.accountConfig,
    abi: accountConfigAbi,
    functionName: "owner",
  });
  if (getAddress(current) !== getAddress(owner)) return `it is owned by ${current}, not by this deployer`;
  return undefined;
}

/** Removes the ledgers of `stateDir` (the edge's Durable Objects); whether there were any. */
export function clearLedgers(stateDir: string): boolean {
  const dir = ledgersDir(stateDir);
  if (!existsSync(dir)) return false;
  rmSync(dir, { recursive: true, force: true });
  return true;
}

/** Where `wrangler dev` keeps the edge's Durable Objects: the ledgers, and the rate limits' objects. */
export function ledgersDir(stateDir: string): string {
  return join(stateDir, "wrangler");
}

/**
 * The ReceiptAnchor the stack's enclave anchors receipts in: `recorded` while the chain holds its
 * code as compiled now, else a new one. It holds no state the ledgers depend on, so a new one
 * clears nothing.
 */
export async function keptOrNewReceiptAnchor(clients: DeployClients, recorded: Address | undefined): Promise<Address> {
  if (recorded) {
    const code = await clients.publicClient.getCode({ address: recorded });
    if (code && code.toLowerCase() === loadArtifact("ReceiptAnchor").deployedBytecode.toLowerCase()) return recorded;
  }
  return (await deployContract(clients, "ReceiptAnchor")).address;
}
