// Wallet signatures for the signature endpoints: EOAs by ECDSA recovery, contract wallets by
// ERC-1271 `isValidSignature` on a local anvil (test/fixtures/Erc1271Wallet.sol, compiled with solc-js).
import { createServer, type AddressInfo } from "node:net";
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  hashMessage,
  http,
  keccak256,
  stringToHex,
  type Address,
  type PublicClient,
} from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAnvil, type Anvil } from "../bin/stack/anvil.ts";
import { isWalletSignature } from "./walletSignature.ts";
import { compileErc1271Wallet } from "../test/fixtures/erc1271Wallet.ts";
import builtForWorkerd from "../test/workers/fixtures/erc1271Wallet.json" with { type: "json" };

const alice = privateKeyToAccount(generatePrivateKey());
const bob = privateKeyToAccount(generatePrivateKey());
const digest = keccak256(stringToHex("sigil wallet signature test"));

/** A client that fails the test if it is asked anything: proves a path needs no RPC. */
const noRpc = {
  getCode: () => Promise.reject(new Error("getCode must not be called")),
  readContract: () => Promise.reject(new Error("readContract must not be called")),
} as unknown as Pick<PublicClient, "readContract" | "getCode">;

let anvil: Anvil;
let client: PublicClient;
let aliceWallet: Address; // owned by alice
let refusingWallet: Address; // owned by alice, reverts on every check

beforeAll(async () => {
  const [{ abi, bytecode }, started] = await Promise.all([
    Promise.resolve().then(compileErc1271Wallet),
    startAnvil({ accounts: 1 }),
  ]);
  anvil = started;
  const transport = http(anvil.rpcUrl);
  client = createPublicClient({ chain: foundry, transport, pollingInterval: 50 }) as PublicClient;
  const walletClient = createWalletClient({ chain: foundry, transport });
  const [deployer] = await walletClient.getAddresses();
  if (!deployer) throw new Error("anvil unlocked no account");
  const deploy = async (refuses: boolean): Promise<Address> => {
    const hash = await walletClient.deployContract({
      abi,
      bytecode,
      args: [alice.address, refuses],
      account: deployer,
      chain: foundry,
    });
    const receipt = await client.waitForTransactionReceipt({ hash });
    if (!receipt.contractAddress) throw new Error("the wallet was not deployed");
    return getAddress(receipt.contractAddress);
  };
  aliceWallet = await deploy(false);
  refusingWallet = await deploy(true);
}, 60_000);

afterAll(async () => {
  await anvil?.stop();
});

describe("EOA signatures", () => {
  it("accepts the address's own signature over the digest (no RPC needed)", async () => {
    const signature = await alice.sign({ hash: digest });
    expect(await isWalletSignature(noRpc, { address: alice.address, digest, signature })).toBe(true);
  });

  it("accepts a signMessage (EIP-191) signature checked against the message's digest", async () => {
    const message = "I administer this Sigil account";
    const signature = await alice.signMessage({ message });
    expect(await isWalletSignature(client, { address: alice.address, digest: hashMessage(message), signature })).toBe(
      true,
    );
  });

  it("matches the address in any case", async () => {
    const signature = await alice.sign({ hash: digest });
    expect(await isWalletSignature(noRpc, { address: alice.address.toLowerCase() as Address, digest, signature })).toBe(
      true,
    );
  });

  it("refuses another signer's signature", async () => {
    const signature = await bob.sign({ hash: digest });
    expect(await isWalletSignature(client, { address: alice.address, digest, signature })).toBe(false);
  });

  it("refuses the right signer over another digest", async () => {
    const signature = await alice.sign({ hash: keccak256(stringToHex("something else")) });
    expect(await isWalletSignature(client, { address: alice.address, digest, signature })).toBe(false);
  });

  it.each([
    ["empty", ""],
    ["not hex", "not a signature"],
    ["0x-prefixed non-hex", "0xzzzz"],
    ["no 0x prefix", "ab".repeat(65)],
  ])("refuses a %s signature without asking the chain", async (_label, signature) => {
    expect(await isWalletSignature(noRpc, { address: alice.address, digest, signature })).toBe(false);
  });

  it.each([
    ["too short", "0x1234"],
    ["65 zero bytes", `0x${"00".repeat(65)}`],
    ["64 random bytes", keccak256("0x01") + keccak256("0x02").slice(2)],
  ])("refuses a %s hex signature for an EOA", async (_label, signature) => {
    expect(await isWalletSignature(client, { address: alice.address, digest, signature })).toBe(false);
  });
});

describe("ERC-1271 contract wallets", () => {
  it("accepts the wallet owner's signature (isValidSignature returns the magic value)", async () => {
    const signature = await alice.sign({ hash: digest });
    expect(await isWalletSignature(client, { address: aliceWallet, digest, signature })).toBe(true);
  });

  it("refuses another key's signature", async () => {
    const signature = await bob.sign({ hash: digest });
    expect(await isWalletSignature(client, { address: aliceWallet, digest, signature })).toBe(false);
  });

  it("refuses the owner's signature over another digest", async () => {
    const signature = await alice.sign({ hash: keccak256(stringToHex("other")) });
    expect(await isWalletSignature(client, { address: aliceWallet, digest, signature })).toBe(false);
  });

  it("refuses a signature the wallet does not understand (not 65 bytes)", async () => {
    expect(await isWalletSignature(client, { address: aliceWallet, digest, signature: "0x1234" })).toBe(false);
  });

  it("refuses (false, not an error) when the wallet reverts", async () => {
    const signature = await alice.sign({ hash: digest });
    expect(await isWalletSignature(client, { address: refusingWallet, digest, signature })).toBe(false);
  });
});

describe("an unreachable chain", () => {
  it("surfaces as an error (not a silent false) when the contract check is needed", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const dead = createPublicClient({ transport: http(`http://127.0.0.1:${port}`, { retryCount: 0 }) });
    const signature = await bob.sign({ hash: digest });
    await expect(isWalletSignature(dead, { address: aliceWallet, digest, signature })).rejects.toThrow();
  });
});

describe("the ERC-1271 wallet fixture", () => {
  it("the copy precompiled for the workerd tests matches the contract (else run node test/workers/fixtures/build.ts)", () => {
    expect(builtForWorkerd).toEqual(JSON.parse(JSON.stringify(compileErc1271Wallet())));
  });
});
