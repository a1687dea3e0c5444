// A wallet's signature history, checkable (issue 34, part 3): every signature the service made with
// the wallet, from the signed receipts of the runs that made them (GET /usage?wallet=, newest first),
// each with its run and its checks — the receipt verified as a run answer's is (verifiedRuns.ts: its
// batch, signature, attested key, instance and compose hash) and, given an RPC of the anchor chain,
// its batch found in the root its instance anchored on chain (anchored.ts).
//
// The account's key sees every run; a usage key its own. The history is the usage history's: runs
// are kept there while billing is on, for 90 days.
import type { Hex, PublicClient } from "viem";
import type { RunReceipt, SignedKind } from "../../shared/receipt.ts";
import { SigilAnchorError, verifyAnchored } from "./anchored.ts";
import type { SigilClient } from "./client.ts";
import { receiptChecker, type AttestationCache, type ReceiptPolicy, SigilReceiptError } from "./verifiedRuns.ts";

/** How one entry's checks came out. */
export type HistoryChecks = {
  /**
   * The receipt verified (its signature by the instance's attested key…); `unpinned`: it did, but
   * its compose hash is not among the allowed ones (`policy.allowedComposeHashes`: what you
   * audited) — the attested code is code nobody told this check to trust; `failed` says which check.
   */
  receipt: "verified" | "unpinned" | "failed";
  /**
   * Its batch in the root anchored on chain: `verified`; `pending` while its epoch is not anchored
   * yet; `failed`; `not_checked` without an RPC; `none` for a receipt that names no anchor.
   */
  anchored: "verified" | "pending" | "failed" | "not_checked" | "none";
  /** What failed or is pending, in words. */
  detail?: string;
  /** The block time (unix seconds) of the anchor: the signature was made no later. */
  anchoredAt?: number;
};

/**
 * One signature the service made with the wallet, with the run that made it and its checks — or,
 * `kind: "key_exported"` (digest null), a run that read the wallet's private key without signing
 * with it here: after which the key may have signed anything, anywhere.
 */
export type WalletSignature = {
  time: string;
  requestId: string;
  cid: string;
  instanceId: string;
  kind: SignedKind | "key_exported";
  digest: Hex | null;
  /** The run read the wallet's private key (getPrivateKey): the receipt cannot speak for what else it signed. */
  keyExported: boolean;
  /** With a guardrail: the rule that allowed it. */
  rule?: string;
  receipt: RunReceipt;
  checks: HistoryChecks;
  /** Both checks passed: the receipt and its anchor. */
  verified: boolean;
};

export type WalletHistoryOptions = {
  wallet: string;
  /** An RPC of the anchor chain for the anchored check (your own, to depend on the service for nothing)… */
  rpcUrl?: string;
  /** …or a viem client of it. */
  publicClient?: PublicClient;
  /** The compose hashes receipts may come from, and whether a simulated attestation passes (as the client's verifyReceipts). */
  policy?: ReceiptPolicy;
  /** At most this many runs (default: all the history keeps). */
  maxRuns?: number;
};

const LOOPBACK = /^https?:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/;

/**
 * The wallet's signatures, newest first, each checked. Reads the usage history page by page; every
 * run's receipt is checked once, and its checks given to each of its signatures.
 */
export async function* walletHistory(
  client: SigilClient,
  options: WalletHistoryOptions,
): AsyncGenerator<WalletSignature> {
  const wallet = options.wallet.toLowerCase();
  const attestations: AttestationCache = new Map();
  const check = receiptChecker(
    client.baseUrl,
    options.policy ?? { allowSimulated: LOOPBACK.test(client.baseUrl) },
    (instance) => client.getReceiptKey({ instance }),
    attestations,
  );
  const chain = options.publicClient ?? options.rpcUrl;
  let runs = 0;
  for await (const event of client.all.listUsage({ kind: "run", wallet })) {
    if (options.maxRuns !== undefined && runs >= options.maxRuns) return;
    runs++;
    const receipt = event.receipt as RunReceipt | null;
    if (receipt?.version !== 2) continue;
    const used = receipt.wallets.find((w) => !w.action && w.address === wallet);
    if (!used || (used.signed.length === 0 && !used.key_exported)) continue;
    const checks = await checksOf(receipt, check, attestations, chain, client);
    const entry = {
      time: event.time,
      requestId: receipt.request_id,
      cid: receipt.cid,
      instanceId: receipt.instance_id,
      keyExported: used.key_exported,
      receipt,
      checks,
      verified: checks.receipt === "verified" && checks.anchored === "verified",
    };
    if (used.signed.length === 0) yield { ...entry, kind: "key_exported", digest: null };
    // Newest first, as the history is: a run's own signatures from its last.
    for (const s of [...used.signed].reverse())
      yield { ...entry, kind: s.kind, digest: s.digest, ...(s.rule === undefined ? {} : { rule: s.rule }) };
  }
}

async function checksOf(
  receipt: RunReceipt,
  check: ReturnType<typeof receiptChecker>,
  attestations: AttestationCache,
  chain: PublicClient | string | undefined,
  client: SigilClient,
): Promise<HistoryChecks> {
  let verdict: HistoryChecks["receipt"] = "verified";
  let detail: string | undefined;
  try {
    await check({ receipt }, undefined);
  } catch (err) {
    if (!(err instanceof SigilReceiptError && err.check === "compose_hash"))
      return {
        receipt: "failed",
        anchored: "not_checked",
        detail: err instanceof SigilReceiptError ? `${err.check}: ${err.message}` : String(err),
      };
    // Signed by the attested key of code not on the allow list: its anchor is still worth checking.
    verdict = "unpinned";
    detail = err.message;
  }
  const with_ = (c: Omit<HistoryChecks, "receipt">): HistoryChecks => ({
    receipt: verdict,
    ...c,
    ...(detail && !c.detail ? { detail } : {}),
  });
  if (!receipt.anchor) return with_({ anchored: "none" });
  if (!chain) return with_({ anchored: "not_checked" });
  try {
    // The batch must be the attested key's (the checker has its attestation by now).
    const attestation = await attestations.get(`${client.baseUrl}|${receipt.instance_id}`);
    const found = await verifyAnchored(client, receipt, {
      ...(typeof chain === "string" ? { rpcUrl: chain } : { publicClient: chain }),
      ...(attestation ? { signer: attestation.address } : {}),
    });
    return with_({ anchored: "verified", anchoredAt: found.anchoredAt });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (err instanceof SigilAnchorError && err.check === "pending")
      return with_({ anchored: "pending", detail: message });
    return with_({ anchored: "failed", detail: message });
  }
}
