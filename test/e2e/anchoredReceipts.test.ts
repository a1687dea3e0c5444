// Receipts anchored on chain (issue 34, part 2; shared/receiptAnchor.ts, enclave/receipts/anchors.ts),
// on the shared local stack, whose enclave anchors every 2 s into the ReceiptAnchor `npm start`
// deployed: each receipt of a few runs names its epoch and is found in the root anchored on the local
// chain for it (the SDK's verifyAnchored, reading the contract itself); `sigil verify-receipt
// --anchored` passes for one of them, offline too from its saved path; with that epoch's root removed
// from the chain's state (anvil_setStorageAt: what a withheld anchor looks like) the same receipt
// fails, in the SDK and in the CLI; a path that is not the receipt's, or an anchor under another key
// than the attested one, fails; a wallet's checked history (walletHistory: verified, unpinned, a run
// that read the key). The 1,000-run burst over
// two instances is test/e2e/anchoredBurst.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  encodeAbiParameters,
  http,
  keccak256,
  numberToHex,
  type Address,
  type PublicClient,
} from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createSigilClient,
  SigilAnchorError,
  topUp,
  verifyAnchored,
  walletHistory,
  type AnchoredReceipt,
  type WalletSignature,
  type SigilClient,
} from "../../sdk/src/index.ts";
import type { RunReceipt } from "../../shared/receipt.ts";
import { runSigil } from "../harness/cli.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";
import { anchorTransaction } from "../harness/anchors.ts";
import { pool } from "../harness/pool.ts";

const RUNS = 20;
const CONCURRENCY = 4;
const CODE = "async function main({ i }) { return i * 2 }";

let stack: SharedLocalStack;
let client: SigilClient;
let chain: PublicClient;
let dir: string;
const answers: Array<{ response: unknown; receipt: RunReceipt }> = [];
const anchored: AnchoredReceipt[] = [];

beforeAll(async () => {
  stack = inject("localStack");
  dir = mkdtempSync(join(tmpdir(), "sigil-anchored-"));
  const anon = createSigilClient({ baseUrl: stack.origin });
  const apiKey = (await anon.newAccount({ account_name: "anchored receipts" })).api_key;
  client = anon.with({ apiKey });
  await topUp(client, { amountCents: 500 });
  const cid = await client.getSigilActionIpfsId(CODE);
  await client.addGroup({
    group_name: "burst",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: [cid],
  });
  chain = createPublicClient({ transport: http(stack.rpcUrl) });
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("receipts anchored on chain", () => {
  it(`every receipt of ${RUNS} runs is in the root anchored on chain for its epoch`, async () => {
    const started = Date.now();
    // Each answer's receipt verified by the SDK on the way (its default), then kept.
    answers.push(
      ...(await pool(RUNS, CONCURRENCY, (i) =>
        client.sigilAction({ code: CODE, js_params: { i } }).then((r) => {
          expect(r.response).toBe(i * 2);
          return r as unknown as { response: unknown; receipt: RunReceipt };
        }),
      )),
    );
    const ranMs = Date.now() - started;
    const contract = answers[0]?.receipt.anchor?.contract;
    expect(contract).toMatch(/^0x[0-9a-f]{40}$/);
    for (const { receipt } of answers)
      expect(receipt.anchor).toEqual({ chain_id: 31337, contract, epoch: expect.any(Number) });

    // The anchors: each epoch read from the chain once (the proofs from the service, the roots from the contract).
    anchored.push(
      ...(await pool(RUNS, 16, (i) =>
        verifyAnchored(client, answers[i] as { receipt: RunReceipt }, { publicClient: chain, waitMs: 30_000 }),
      )),
    );
    const epochs = new Map<number, AnchoredReceipt>();
    for (const a of anchored) epochs.set(a.epoch, a);
    // Each epoch's heads: every batch the burst's receipts were signed in, and each head in one epoch only.
    const heads = new Set(anchored.map((a) => `${a.epoch}:${a.proof.head}`));
    for (const a of epochs.values())
      expect(a.heads).toBeGreaterThanOrEqual([...heads].filter((h) => h.startsWith(`${a.epoch}:`)).length);
    const signer = anchored[0]?.signer;
    for (const [i, a] of anchored.entries()) {
      expect(a.signer).toBe(signer);
      // No later than its anchor's block: the run ended before the block's time (whole seconds).
      expect(Date.parse(answers[i]?.receipt.ended_at ?? "")).toBeLessThan((a.anchoredAt + 1) * 1000);
    }
    console.log(
      `${RUNS} runs in ${ranMs} ms; ${heads.size} batch heads in ${epochs.size} epochs, each anchored: ${[...epochs.values()].map((e) => `${e.epoch} (${e.heads} heads, tx ${e.proof.transaction_hash?.slice(0, 10)}…)`).join(", ")}`,
    );
  }, 120_000);

  it("the anchor transaction: one per epoch, its gas", async () => {
    const epochs = new Map<number, number>();
    for (const [i, a] of anchored.entries()) epochs.set(a.epoch, i);
    const hashes = new Set(
      await Promise.all(
        [...epochs.values()].map((i) =>
          anchorTransaction(client, (answers[i] as { receipt: RunReceipt }).receipt, anchored[i] as AnchoredReceipt),
        ),
      ),
    );
    expect(hashes.size).toBe(epochs.size);
    const receipts = await Promise.all([...hashes].map((hash) => chain.getTransactionReceipt({ hash })));
    for (const r of receipts) {
      expect(r.status).toBe("success");
      expect(r.to?.toLowerCase()).toBe(answers[0]?.receipt.anchor?.contract);
    }
    const gas = receipts.map((r) => Number(r.gasUsed));
    console.log(`anchor transactions: ${receipts.length}, gas used each: ${[...new Set(gas)].join(", ")}`);
    expect(Math.max(...gas)).toBeLessThan(120_000);
  });

  it("sigil verify-receipt --anchored passes, from the service and offline from the saved path; the root removed from the chain, it fails", async () => {
    const answer = answers[0] as { receipt: RunReceipt };
    const { proof, epoch, signer } = anchored[0] as AnchoredReceipt;
    const file = join(dir, "run.json");
    writeFileSync(file, JSON.stringify(answer));
    const proofFile = join(dir, "anchor.json");
    writeFileSync(proofFile, JSON.stringify(proof));
    const cli = (...extra: string[]) =>
      runSigil(
        [
          "verify-receipt",
          file,
          "--api",
          stack.origin,
          "--allow-simulated",
          "--anchored",
          "--rpc-url",
          stack.rpcUrl,
          ...extra,
        ],
        {
          env: {},
          cwd: dir,
        },
      );
    const online = await cli();
    expect(online.code, online.stdout + online.stderr).toBe(0);
    expect(online.stdout).toMatch(/PASS\s+anchored\s+.*epoch/);
    const offline = await cli("--anchor-proof", proofFile);
    expect(offline.code, offline.stdout + offline.stderr).toBe(0);

    // The epoch's root, removed from the contract's storage: anchors[signer][epoch].root is the
    // first slot of keccak256(epoch . keccak256(signer . 0)).
    const contract = answer.receipt.anchor?.contract as Address;
    const slot = keccak256(
      encodeAbiParameters(
        [{ type: "uint64" }, { type: "bytes32" }],
        [BigInt(epoch), keccak256(encodeAbiParameters([{ type: "address" }, { type: "uint256" }], [signer, 0n]))],
      ),
    );
    const before = await chain.getStorageAt({ address: contract, slot });
    expect(before).toBe(proof.root);
    await chain.request({
      method: "anvil_setStorageAt" as never,
      params: [contract, slot, numberToHex(0, { size: 32 })] as never,
    });
    try {
      const missing = await cli("--anchor-proof", proofFile);
      expect(missing.code, missing.stdout).toBe(1);
      expect(missing.stdout).toMatch(/FAIL\s+anchored\s+.*no root is anchored/);
      const err = await verifyAnchored(client, answer, { publicClient: chain }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SigilAnchorError);
      expect((err as SigilAnchorError).check).toBe("not_anchored");
    } finally {
      await chain.request({ method: "anvil_setStorageAt" as never, params: [contract, slot, before] as never });
    }
  }, 120_000);

  it("a path that is not the receipt's, or a receipt changed, fails its anchored check", async () => {
    const [a, b] = answers as Array<{ receipt: RunReceipt }>;
    const other = anchored.find((x) => x.proof.head !== anchored[0]?.proof.head);
    if (other) {
      const err = await verifyAnchored(client, a as { receipt: RunReceipt }, {
        publicClient: chain,
        proof: other.proof,
      }).catch((e: unknown) => e);
      expect((err as SigilAnchorError).check).toBe("proof");
    }
    const moved = {
      ...(b as { receipt: RunReceipt }).receipt,
      anchor: { ...(b?.receipt.anchor as NonNullable<RunReceipt["anchor"]>), epoch: 1 },
    };
    const err = await verifyAnchored(client, moved, { publicClient: chain }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SigilAnchorError);
    // Anchored, but under a key that is not the one named as attested: `signer`.
    const wrongKey = await verifyAnchored(client, b as { receipt: RunReceipt }, {
      publicClient: chain,
      signer: `0x${"12".repeat(20)}`,
    }).catch((e: unknown) => e);
    expect((wrongKey as SigilAnchorError).check).toBe("signer");
  });

  it("a wallet's history: every signature made with it, from its runs' receipts (GET /usage?wallet=), each verified and anchored", async () => {
    const SIGN = `async function main({ wallet, n }) {
      const out = [];
      for (let i = 0; i < n; i++) out.push(await Sigil.Actions.signMessage({ pkpId: wallet, message: "history " + i }));
      return out;
    }`;
    const [a, b] = await Promise.all([
      client.createWallet({ name: "history a" }),
      client.createWallet({ name: "history b" }),
    ]);
    const cid = await client.getSigilActionIpfsId(SIGN);
    await client.addGroup({
      group_name: "history",
      group_description: "",
      pkp_ids_permitted: [a.wallet_address, b.wallet_address],
      cid_hashes_permitted: [cid],
    });
    const runs: Array<Awaited<ReturnType<SigilClient["sigilAction"]>>> = [];
    for (const [wallet, n] of [
      [a.wallet_address, 2],
      [b.wallet_address, 1],
      [a.wallet_address, 1],
    ] as const)
      runs.push(await client.sigilAction({ code: SIGN, js_params: { wallet, n } }));
    // Newest first: the newest run first, and each run's signatures from its last.
    const signedBy = (w: string) =>
      [...runs]
        .reverse()
        .flatMap((r) =>
          [...(r.receipt.wallets.find((x) => x.address === w)?.signed ?? [])].reverse().map((s) => s.digest),
        );
    let history: WalletSignature[] = [];
    await expect
      .poll(
        async () => {
          history = [];
          for await (const s of walletHistory(client, { wallet: a.wallet_address, publicClient: chain }))
            history.push(s);
          return history.map((s) => s.checks.anchored);
        },
        { timeout: 30_000, interval: 1_000 },
      )
      .toEqual(["verified", "verified", "verified"]);
    expect(history.map((s) => s.digest)).toEqual(signedBy(a.wallet_address));
    expect(history.every((s) => s.verified && s.checks.receipt === "verified" && s.kind === "message")).toBe(true);
    expect(history.map((s) => s.requestId)).toEqual([
      runs[2]?.receipt.request_id,
      runs[0]?.receipt.request_id,
      runs[0]?.receipt.request_id,
    ]);
    const other: WalletSignature[] = [];
    for await (const s of walletHistory(client, { wallet: b.wallet_address })) other.push(s);
    expect(other.map((s) => [s.requestId, s.checks.receipt, s.checks.anchored])).toEqual([
      [runs[1]?.receipt.request_id, "verified", "not_checked"],
    ]);
    // With a list of compose hashes that lacks the stack's, a receipt is attested but unpinned (its
    // anchor still checked), and never `verified`.
    const pinnedElsewhere: WalletSignature[] = [];
    for await (const s of walletHistory(client, {
      wallet: a.wallet_address,
      publicClient: chain,
      policy: { allowedComposeHashes: [`0x${"00".repeat(32)}`], allowSimulated: true },
    }))
      pinnedElsewhere.push(s);
    expect(pinnedElsewhere.map((s) => [s.checks.receipt, s.checks.anchored, s.verified])).toEqual(
      Array.from({ length: 3 }, () => ["unpinned", "verified", false]),
    );
    // A run that read the wallet's key and signed nothing: listed, as what it is.
    const READ =
      "async function main({ wallet }) { return (await Sigil.Actions.getPrivateKey({ pkpId: wallet })).length }";
    const readCid = await client.getSigilActionIpfsId(READ);
    const c = await client.createWallet({ name: "history c" });
    await client.addGroup({
      group_name: "history read",
      group_description: "",
      pkp_ids_permitted: [c.wallet_address],
      cid_hashes_permitted: [readCid],
    });
    const read = await client.sigilAction({ code: READ, js_params: { wallet: c.wallet_address } });
    expect(read.has_error, JSON.stringify(read.error)).toBe(false);
    const exported: WalletSignature[] = [];
    for await (const s of walletHistory(client, { wallet: c.wallet_address })) exported.push(s);
    expect(exported.map((s) => [s.kind, s.digest, s.keyExported, s.requestId])).toEqual([
      ["key_exported", null, true, read.receipt.request_id],
    ]);
    // The listing itself: only the runs that signed with the wallet.
    const { events } = await client.listUsage({
      kind: "run",
      wallet: b.wallet_address.toUpperCase().replace("0X", "0x"),
    });
    expect(events.map((e) => e.request_id)).toEqual([runs[1]?.receipt.request_id]);
  }, 120_000);
});
