// A wallet's Solana key as scripts use it (docs/actions.md, getSolanaAddress, signSolanaMessage,
// signSolanaTransaction), against the real enclave, and what it signs processed by a real Solana
// runtime: litesvm (the Solana VM as a library) takes the transactions the service signed — a SOL
// transfer with the wallet as fee payer, the wallet as one signer of two, an SPL-Token transfer, a
// v0 transaction through an address lookup table — and the balances move. The wallet's Solana key
// is re-derived here from the test root (keys/derive.ts), so every address and signature is checked
// against @solana/kit's own.
import { sha256 } from "@noble/hashes/sha2";
import { getTransferSolInstruction } from "@solana-program/system";
import {
  AccountState,
  getMintEncoder,
  getTokenDecoder,
  getTokenEncoder,
  getTransferInstruction,
  TOKEN_PROGRAM_ADDRESS,
} from "@solana-program/token";
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  compressTransactionMessageUsingAddressLookupTables,
  createKeyPairFromPrivateKeyBytes,
  createNoopSigner,
  createTransactionMessage,
  generateKeyPairSigner,
  getAddressEncoder,
  getAddressFromPublicKey,
  getBase58Encoder,
  getBase64EncodedWireTransaction,
  getTransactionDecoder,
  lamports,
  partiallySignTransaction,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  signBytes,
  type Address as SolanaAddress,
  type Instruction,
  type Transaction,
} from "@solana/kit";
import { FailedTransactionMetadata, LiteSVM } from "litesvm";
import { bytesToHex, getAddress, hexToBytes, type Address, type Hex } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../shared/apiKey.ts";
import { apiKeyHash } from "../../shared/hashing.ts";
import { Keyring } from "../../enclave/keys/derive.ts";
import { callEnclave, ok, run, walletDerivation } from "./client.ts";
import { TEST_ROOT_KEY } from "./constants.ts";

/** One signature asked of the wallet: its result, or the error's code and message. */
const TRY = `async function main({ wallet, op, args }) {
  try {
    return { ok: await Sigil.Actions[op]({ pkpId: wallet, ...args }) };
  } catch (e) {
    return { code: e.code ?? null, message: e.message };
  }
}`;

type Receipt = { wallets: { address: string; signed: { kind: string; digest: Hex }[] }[] };

const keyring = new Keyring(hexToBytes(TEST_ROOT_KEY));
let apiKey: string;
let wallet: Address;
/** The wallet's Solana address and seed, as the enclave derives them (the test root key). */
let solana: SolanaAddress;
let seed: Uint8Array;
let guarded: Address;
/** The one address the guarded wallet's guardrail lets it send SOL to. */
let allowedRecipient: SolanaAddress;

async function attempt(pkp: Address, op: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  const r = await run(apiKey, TRY, { wallet: pkp, op, args }, extra);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const body = r.body as unknown as { response: { ok?: unknown; code?: string; message?: string }; receipt: Receipt };
  return { ...body.response, receipt: body.receipt };
}

/** The wallet's signature over a wire transaction, through a run; the transaction back, decoded. */
async function signedBySigil(transaction: Transaction): Promise<Transaction> {
  const r = await attempt(wallet, "signSolanaTransaction", {
    transaction: getBase64EncodedWireTransaction(transaction),
  });
  expect(r.code, r.message).toBeUndefined();
  return getTransactionDecoder().decode(Buffer.from(r.ok as string, "base64")) as Transaction;
}

function sent(svm: LiteSVM, transaction: Transaction): void {
  const result = svm.sendTransaction(transaction);
  if (result instanceof FailedTransactionMetadata) throw new Error(`the transaction failed: ${String(result.err())}`);
}

/** A v0 message paid by `payer` (the wallet, by default), with a blockhash of `svm`. */
function unsigned(svm: LiteSVM, instructions: Instruction[], payer: SolanaAddress = solana) {
  return pipe(
    createTransactionMessage({ version: 0 }),
    (m) => setTransactionMessageFeePayer(payer, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash({ blockhash: svm.latestBlockhash(), lastValidBlockHeight: 1000n }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
}

/** The same as a legacy message. */
function unsignedLegacy(svm: LiteSVM, instructions: Instruction[]) {
  return pipe(
    createTransactionMessage({ version: "legacy" }),
    (m) => setTransactionMessageFeePayer(solana, m),
    (m) =>
      setTransactionMessageLifetimeUsingBlockhash({ blockhash: svm.latestBlockhash(), lastValidBlockHeight: 1000n }, m),
    (m) => appendTransactionMessageInstructions(instructions, m),
  );
}

beforeAll(async () => {
  apiKey = (await ok<{ api_key: string }>("new_account", { account_name: "solana" })).api_key;
  wallet = getAddress((await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey })).wallet_address);
  guarded = getAddress((await ok<{ wallet_address: Address }>("create_wallet", { api_key: apiKey })).wallet_address);
  await ok("add_group", {
    api_key: apiKey,
    group_name: "any",
    group_description: "",
    pkp_ids_permitted: [wallet, guarded],
    cid_hashes_permitted: ["0"],
  });
  allowedRecipient = (await generateKeyPairSigner()).address;
  await ok("set_wallet_guardrail", {
    api_key: apiKey,
    wallet_address: guarded,
    guardrail: {
      version: 1,
      name: "one recipient",
      messages: { pattern: "*" },
      solana: {
        transactions: { transfers: { allow: [allowedRecipient], max_lamports: "1000000" } },
        messages: { pattern: "gm*" },
      },
    },
  });
  const master = apiKeyHash(apiKey);
  const key = keyring.solanaKey(master, await walletDerivation(master, wallet));
  solana = key.address;
  seed = key.seed;
}, 120_000);

describe("a wallet's Solana key in a script", () => {
  it("getSolanaAddress: the wallet's own address, @solana/kit's for the key derived from (account, derivation)", async () => {
    const r = await attempt(wallet, "getSolanaAddress", {});
    expect(r.ok).toBe(solana);
    expect(r.ok).toBe(await getAddressFromPublicKey((await createKeyPairFromPrivateKeyBytes(seed)).publicKey));
    // The EVM wallet of another account, or another wallet of this one, has another Solana address.
    expect((await attempt(guarded, "getSolanaAddress", {})).ok).not.toBe(solana);
  });

  it("signSolanaMessage: Ed25519 over the message's bytes, base58, byte for byte @solana/kit's; the receipt records SHA-256 of the bytes", async () => {
    const pair = await createKeyPairFromPrivateKeyBytes(seed);
    for (const [message, bytes] of [
      ["gm from Sigil", new TextEncoder().encode("gm from Sigil")],
      [{ raw: "0x00ff10" }, hexToBytes("0x00ff10")],
    ] as const) {
      const r = await attempt(wallet, "signSolanaMessage", { message });
      const signature = getBase58Encoder().encode(r.ok as string);
      expect(signature).toEqual(new Uint8Array(await signBytes(pair.privateKey, bytes)));
      expect(r.receipt.wallets[0]?.signed).toEqual([{ kind: "solana_message", digest: bytesToHex(sha256(bytes)) }]);
    }
  });

  it("a SOL transfer with the wallet as fee payer, legacy and v0: signed in its slot, and litesvm moves the lamports", async () => {
    for (const version of ["legacy", 0] as const) {
      const svm = new LiteSVM();
      svm.airdrop(solana, lamports(2_000_000_000n));
      const recipient = (await generateKeyPairSigner()).address;
      const transfer = [
        getTransferSolInstruction({
          source: createNoopSigner(solana),
          destination: recipient,
          amount: lamports(1_000_000n),
        }),
      ];
      const transaction =
        version === 0 ? compileTransaction(unsigned(svm, transfer)) : compileTransaction(unsignedLegacy(svm, transfer));
      const signed = await signedBySigil(transaction);
      expect(new Uint8Array(signed.messageBytes)).toEqual(new Uint8Array(transaction.messageBytes));
      const pair = await createKeyPairFromPrivateKeyBytes(seed);
      expect(new Uint8Array(signed.signatures[solana] ?? [])).toEqual(
        new Uint8Array(await signBytes(pair.privateKey, transaction.messageBytes)),
      );
      sent(svm, signed);
      expect(svm.getBalance(recipient)).toBe(1_000_000n);
    }
  });

  it("the wallet as one signer of two: another key signed first, the wallet adds its own and keeps the other's", async () => {
    const svm = new LiteSVM();
    const other = await generateKeyPairSigner();
    svm.airdrop(solana, lamports(1_000_000_000n));
    svm.airdrop(other.address, lamports(1_000_000_000n));
    const recipient = (await generateKeyPairSigner()).address;
    // The other key pays the fee and sends; the wallet sends too.
    const message = unsigned(
      svm,
      [
        getTransferSolInstruction({ source: other, destination: recipient, amount: lamports(1_000_000n) }),
        getTransferSolInstruction({
          source: createNoopSigner(solana),
          destination: recipient,
          amount: lamports(500_000n),
        }),
      ],
      other.address,
    );
    const partly = await partiallySignTransaction([other.keyPair], compileTransaction(message));
    expect(partly.signatures[solana]).toBeNull();
    const signed = await signedBySigil(partly);
    expect(new Uint8Array(signed.signatures[other.address] ?? [])).toEqual(
      new Uint8Array(partly.signatures[other.address] ?? [1]),
    );
    sent(svm, signed);
    expect(svm.getBalance(recipient)).toBe(1_500_000n);
  });

  it("an SPL-Token transfer the wallet authorizes: the token balances move", async () => {
    const svm = new LiteSVM();
    svm.airdrop(solana, lamports(1_000_000_000n));
    const [mint, from, to, owner] = await Promise.all([1, 2, 3, 4].map(() => generateKeyPairSigner()));
    const rent = lamports(10_000_000n);
    svm.setAccount({
      address: mint!.address,
      lamports: rent,
      programAddress: TOKEN_PROGRAM_ADDRESS,
      executable: false,
      space: 82n,
      data: new Uint8Array(
        getMintEncoder().encode({
          mintAuthority: null,
          supply: 1_000n,
          decimals: 0,
          isInitialized: true,
          freezeAuthority: null,
        }),
      ),
    });
    const tokenAccount = (at: SolanaAddress, holder: SolanaAddress, amount: bigint) =>
      svm.setAccount({
        address: at,
        lamports: rent,
        programAddress: TOKEN_PROGRAM_ADDRESS,
        executable: false,
        space: 165n,
        data: new Uint8Array(
          getTokenEncoder().encode({
            mint: mint!.address,
            owner: holder,
            amount,
            delegate: null,
            state: AccountState.Initialized,
            isNative: null,
            delegatedAmount: 0n,
            closeAuthority: null,
          }),
        ),
      });
    tokenAccount(from!.address, solana, 1_000n);
    tokenAccount(to!.address, owner!.address, 0n);
    const message = unsigned(svm, [
      getTransferInstruction({
        source: from!.address,
        destination: to!.address,
        authority: createNoopSigner(solana),
        amount: 250n,
      }),
    ]);
    sent(svm, await signedBySigil(compileTransaction(message)));
    const balance = (at: SolanaAddress) => {
      const account = svm.getAccount(at);
      if (!account.exists) throw new Error(`no account ${at}`);
      return getTokenDecoder().decode(account.data).amount;
    };
    expect(balance(from!.address)).toBe(750n);
    expect(balance(to!.address)).toBe(250n);
  });

  it("a v0 transaction whose recipient comes from an address lookup table", async () => {
    const svm = new LiteSVM();
    svm.airdrop(solana, lamports(1_000_000_000n));
    const recipient = (await generateKeyPairSigner()).address;
    const table = (await generateKeyPairSigner()).address;
    // An active lookup table (its program's layout: a 56-byte header, then the addresses), extended before this slot.
    const header = new Uint8Array(56);
    const view = new DataView(header.buffer);
    view.setUint32(0, 1, true); // LookupTableMeta
    view.setBigUint64(4, 0xffff_ffff_ffff_ffffn, true); // never deactivated
    view.setBigUint64(12, 0n, true); // last extended at slot 0
    svm.setAccount({
      address: table,
      lamports: lamports(10_000_000n),
      programAddress: address("AddressLookupTab1e1111111111111111111111111"),
      executable: false,
      space: 56n + 32n,
      data: Uint8Array.from([...header, ...getAddressEncoder().encode(recipient)]),
    });
    svm.warpToSlot(5n);
    const message = compressTransactionMessageUsingAddressLookupTables(
      unsigned(svm, [
        getTransferSolInstruction({
          source: createNoopSigner(solana),
          destination: recipient,
          amount: lamports(1_000_000n),
        }),
      ]),
      { [table]: [recipient] },
    );
    expect(
      JSON.stringify(message.instructions[0]?.accounts?.[1], (_, v) => (typeof v === "bigint" ? String(v) : v)),
    ).toContain(table);
    sent(svm, await signedBySigil(compileTransaction(message)));
    expect(svm.getBalance(recipient)).toBe(1_000_000n);
  });

  it("a transaction that does not name the wallet's Solana address among its signers is a script_error; one that is not a wire transaction a TypeError", async () => {
    const svm = new LiteSVM();
    const stranger = await generateKeyPairSigner();
    const message = unsigned(
      svm,
      [getTransferSolInstruction({ source: stranger, destination: stranger.address, amount: lamports(1n) })],
      stranger.address,
    );
    const notOurs = await attempt(wallet, "signSolanaTransaction", {
      transaction: getBase64EncodedWireTransaction(compileTransaction(message)),
    });
    expect(notOurs.code).toBe("script_error");
    expect(notOurs.message).toBe(
      `signSolanaTransaction: the transaction does not name the wallet's Solana address ${solana} among its signers`,
    );
    // Refused before the key was used: the receipt records no signature.
    expect(notOurs.receipt.wallets).toEqual([]);
    const garbage = await attempt(wallet, "signSolanaTransaction", { transaction: "AAAA" });
    expect(garbage.message).toMatch(/^signSolanaTransaction: not a wire transaction/);
    const missing = await attempt(wallet, "signSolanaTransaction", { transaction: 42 });
    expect(missing.message).toMatch(/must be a base64 wire transaction/);
  });

  it("signSolanaMessage refuses a transaction's message (it would sign the transaction past what a transaction's signing checks)", async () => {
    const svm = new LiteSVM();
    const transaction = compileTransaction(
      unsigned(svm, [
        getTransferSolInstruction({ source: createNoopSigner(solana), destination: solana, amount: lamports(1n) }),
      ]),
    );
    const r = await attempt(wallet, "signSolanaMessage", {
      message: { raw: bytesToHex(new Uint8Array(transaction.messageBytes)) },
    });
    expect(r.message).toBe(
      "signSolanaMessage: these bytes are a Solana transaction's message; sign it with signSolanaTransaction",
    );
    expect(r.receipt.wallets).toEqual([]);
  });

  it("the receipt names the transaction's signature as solana_transaction with SHA-256 of its message", async () => {
    const svm = new LiteSVM();
    const message = unsigned(svm, [
      getTransferSolInstruction({ source: createNoopSigner(solana), destination: solana, amount: lamports(1n) }),
    ]);
    const transaction = compileTransaction(message);
    const r = await attempt(wallet, "signSolanaTransaction", {
      transaction: getBase64EncodedWireTransaction(transaction),
    });
    expect(r.receipt.wallets).toEqual([
      expect.objectContaining({
        address: wallet.toLowerCase(),
        signed: [{ kind: "solana_transaction", digest: bytesToHex(sha256(new Uint8Array(transaction.messageBytes))) }],
      }),
    ]);
  });

  it("a guarded wallet signs what its guardrail's Solana rules allow — litesvm moves the lamports — and is refused the rest, saying the rule", async () => {
    const master = apiKeyHash(apiKey);
    const guardedSolana = keyring.solanaKey(master, await walletDerivation(master, guarded)).address;
    const svm = new LiteSVM();
    svm.airdrop(guardedSolana, lamports(1_000_000_000n));
    const transfer = (to: SolanaAddress, amount: bigint) =>
      compileTransaction(
        unsigned(
          svm,
          [
            getTransferSolInstruction({
              source: createNoopSigner(guardedSolana),
              destination: to,
              amount: lamports(amount),
            }),
          ],
          guardedSolana,
        ),
      );
    const allowed = await attempt(guarded, "signSolanaTransaction", {
      transaction: getBase64EncodedWireTransaction(transfer(allowedRecipient, 1_000_000n)),
    });
    expect(allowed.code).toBeUndefined();
    sent(svm, getTransactionDecoder().decode(Buffer.from(allowed.ok as string, "base64")) as Transaction);
    expect(svm.getBalance(allowedRecipient)).toBe(1_000_000n);

    const stranger = (await generateKeyPairSigner()).address;
    for (const [to, amount, rule] of [
      [stranger, 1n, "solana.transactions.transfers.allow"],
      [allowedRecipient, 1_000_001n, "solana.transactions.transfers.max_lamports"],
    ] as const) {
      const refused = await attempt(guarded, "signSolanaTransaction", {
        transaction: getBase64EncodedWireTransaction(transfer(to, amount)),
      });
      expect(refused.code).toBe("guardrail_denied");
      expect(refused.message).toContain(rule);
    }
    expect(svm.getBalance(stranger)).toBeFalsy();

    expect((await attempt(guarded, "signSolanaMessage", { message: "gm" })).code).toBeUndefined();
    const message = await attempt(guarded, "signSolanaMessage", { message: "hello" });
    expect(message.code).toBe("guardrail_denied");
    expect(message.message).toContain("solana.messages.pattern");
    // Its EVM key signs what the guardrail allows, as before.
    expect((await attempt(guarded, "signMessage", { message: "hello" })).code).toBeUndefined();
  });

  it("a dry run signs nothing: a message gets a signature of zeros, a transaction comes back as it was sent", async () => {
    const zeros = (await attempt(wallet, "signSolanaMessage", { message: "dry" }, { dry_run: true })).ok as string;
    expect(getBase58Encoder().encode(zeros)).toEqual(new Uint8Array(64));
    const svm = new LiteSVM();
    const message = unsigned(svm, [
      getTransferSolInstruction({ source: createNoopSigner(solana), destination: solana, amount: lamports(1n) }),
    ]);
    const wire = getBase64EncodedWireTransaction(compileTransaction(message));
    expect((await attempt(wallet, "signSolanaTransaction", { transaction: wire }, { dry_run: true })).ok).toBe(wire);
  });
});

describe("a wallet's Solana address in the enclave's answers", () => {
  it("new_account and create_wallet answer the new wallet's Solana address beside its EVM address", async () => {
    const account = await ok<{ api_key: string; wallet_address: Address; solana_address: string }>("new_account", {
      account_name: "solana answers",
    });
    const master = apiKeyHash(account.api_key);
    expect(account.solana_address).toBe(keyring.solanaAddress(master, master));
    const created = await ok<{ wallet_address: Address; solana_address: string }>("create_wallet", {
      api_key: account.api_key,
    });
    const derivation = await walletDerivation(master, getAddress(created.wallet_address));
    expect(created.solana_address).toBe(keyring.solanaAddress(master, derivation));
  });

  it("solana_addresses (the edge's lists ask it): the caller's wallets, any of its live keys; another account's wallet left out; an unknown key refused", async () => {
    const other = await ok<{ api_key: string; wallet_address: Address }>("new_account", { account_name: "other" });
    const reply = await callEnclave<{ solana_addresses: Record<string, string> }>("solana_addresses", {
      api_key: apiKey,
      wallets: [wallet, guarded.toLowerCase(), other.wallet_address],
    });
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const answer = reply.body;
    expect(answer.solana_addresses).toEqual({
      [wallet.toLowerCase()]: solana,
      [guarded.toLowerCase()]: (await attempt(guarded, "getSolanaAddress", {})).ok,
    });
    const unknown = await callEnclave("solana_addresses", { api_key: generateApiKey(), wallets: [wallet] });
    expect(unknown.status).toBe(401);
    const tooMany = await callEnclave("solana_addresses", {
      api_key: apiKey,
      wallets: Array.from({ length: 101 }, () => wallet),
    });
    expect(tooMany.status).toBe(400);
  });
});
