// @sigil/sdk/solana against the real local stack (the edge under wrangler dev, billing on, the
// enclave, anvil): toSigilSolanaSigner is a @solana/kit signer whose key is a Sigil wallet's Solana
// key, and what it signs is processed by a real Solana runtime (litesvm): a SOL transfer it pays for
// and sends, signed by kit's own signTransactionMessageWithSigners; a message it signs verifies with
// kit; its address is the one create_wallet and list_wallets answer; a guarded wallet's signature is
// refused as the service refuses it.
import { getTransferSolInstruction } from "@solana-program/system";
import {
  appendTransactionMessageInstruction,
  createSignableMessage,
  createTransactionMessage,
  generateKeyPairSigner,
  getPublicKeyFromAddress,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  signTransactionMessageWithSigners,
  verifySignature,
} from "@solana/kit";
import { FailedTransactionMetadata, LiteSVM } from "litesvm";
import { getAddress, type Address } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { grantSolanaSigner, SOLANA_SIGNER_CID, SOLANA_SIGNER_CODE, toSigilSolanaSigner } from "../../sdk/src/solana.ts";
import { computeCid } from "../../shared/cid.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

let client: SigilClient;
let wallet: Address;
let solanaAddress: string;

beforeAll(async () => {
  const stack: SharedLocalStack = inject("localStack");
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "sdk solana" });
  client = anon.with({ apiKey: created.api_key });
  await topUp(client, { amountCents: 500 });
  const made = await client.createWallet({ name: "solana" });
  wallet = getAddress(made.wallet_address);
  solanaAddress = made.solana_address;
}, 120_000);

describe("toSigilSolanaSigner", () => {
  it("the action's CID is that of its code; its address is the wallet's solana_address, asked of the enclave when not given", async () => {
    expect(SOLANA_SIGNER_CID).toBe(await computeCid(SOLANA_SIGNER_CODE));
    await grantSolanaSigner(client, { wallet });
    const signer = await toSigilSolanaSigner({ client, wallet });
    expect(signer.address).toBe(solanaAddress);
    expect(signer.wallet).toBe(wallet);
    const listed = await client.listWallets({});
    expect(listed.find((w) => w.wallet_address === wallet.toLowerCase())?.solana_address).toBe(solanaAddress);
  });

  it("pays for and signs a SOL transfer with kit's own signTransactionMessageWithSigners; litesvm moves the lamports", async () => {
    const signer = await toSigilSolanaSigner({ client, wallet, address: solanaAddress });
    const svm = new LiteSVM();
    svm.airdrop(signer.address, lamports(2_000_000_000n));
    const recipient = (await generateKeyPairSigner()).address;
    const transaction = await pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(signer, m),
      (m) => svm.setTransactionMessageLifetimeUsingLatestBlockhash(m),
      (m) =>
        appendTransactionMessageInstruction(
          getTransferSolInstruction({ source: signer, destination: recipient, amount: lamports(1_000_000n) }),
          m,
        ),
      (m) => signTransactionMessageWithSigners(m),
    );
    const result = svm.sendTransaction(transaction);
    if (result instanceof FailedTransactionMetadata) throw new Error(`the transaction failed: ${String(result.err())}`);
    expect(svm.getBalance(recipient)).toBe(1_000_000n);
  });

  it("signs a message that kit verifies against its address", async () => {
    const signer = await toSigilSolanaSigner({ client, wallet, address: solanaAddress });
    const message = createSignableMessage("gm from the enclave");
    const [signatures] = await signer.signMessages([message]);
    const signature = signatures?.[signer.address];
    expect(signature).toBeDefined();
    expect(await verifySignature(await getPublicKeyFromAddress(signer.address), signature!, message.content)).toBe(
      true,
    );
  });

  it("with grant: true, a wallet no group lets the action use is granted at the first signature", async () => {
    const other = getAddress((await client.createWallet({ name: "granted on use" })).wallet_address);
    const signer = await toSigilSolanaSigner({ client, wallet: other, grant: true });
    const [signatures] = await signer.signMessages([createSignableMessage("granted")]);
    expect(signatures?.[signer.address]).toHaveLength(64);
  });

  it("a guarded wallet's Solana signature is refused with the service's code, as a SigilError", async () => {
    const guarded = getAddress((await client.createWallet({ name: "guarded" })).wallet_address);
    await client.setWalletGuardrail({
      wallet_address: guarded,
      guardrail: { version: 1, name: "evm only", messages: { pattern: "*" } },
    });
    const signer = await toSigilSolanaSigner({ client, wallet: guarded, grant: true });
    await expect(signer.signMessages([createSignableMessage("no")])).rejects.toMatchObject({
      code: "guardrail_denied",
    });
  });
});
