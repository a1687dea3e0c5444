// The crash test of budgets (issue 30's acceptance; docs/design/guardrails.md, Budgets), shared by its
// short form in `npm test` (test/e2e/budgetCrash.test.ts) and its long form (`npm run soak:budgets`,
// test/soak/budgets.ts): many concurrent signing runs over several enclave instances against one
// wallet whose budget allows a fixed number of transfers, with enclaves killed (SIGKILL of the
// process group) and started again on their ports while runs are in flight, and every request
// retried by the SDK under its Idempotency-Key. Afterwards the signatures are counted three ways —
// the signed transactions the runs answered, the digests the runs' receipts list, the transfers
// the chain mines when every one of them is broadcast — and by the wallet's Budgets object (a dry
// run reads its counters): each must be exactly the cap, and the recipient holds not a wei more.
//
// The stack: anvil with AccountConfig and N enclaves (test/harness/stack.ts; one root key, so
// every instance derives the same wallet; each its own state folder, payer range and port), the
// Stripe emulator, and the edge under wrangler dev, billing on, with SIGIL_ENCLAVE_URLS listing
// every enclave. Everything on 127.0.0.1 and free ports; `stop()` stops each part by its process group.
import { createHash, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createPublicClient,
  createTestClient,
  http,
  keccak256,
  parseEther,
  parseTransaction,
  serializeTransaction,
  type Address,
  type Hex,
} from "viem";
import { generatePrivateKey, privateKeyToAddress } from "viem/accounts";
import { freePort, spawnEdge, type EdgeProcess } from "../../bin/stack/edge.ts";
import { DEV_APP_COMPOSE_PATH } from "../../deploy/release.ts";
import { startStripeEmulator, type StripeEmulator } from "../../emulators/stripe.ts";
import { createSigilClient, isSigilError, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack, type TestStack } from "./stack.ts";

/** What each run transfers: 0.01 ETH. */
export const TRANSFER_WEI = parseEther("0.01");
/** The transfers' fee cap: above anvil's base fee, so that every signed transfer can be mined. */
const MAX_FEE_WEI = 2_000_000_000n;
/** The budget's name in the guardrail: a refusal's rule is `budgets.cap`. */
export const BUDGET_NAME = "cap";

/** One enclave instance of the crash stack. */
export type CrashEnclave = {
  url: string;
  /** SIGKILL of its process group, then a new process on the same port (resolves once it is ready). */
  restart(): Promise<void>;
  output(): string;
};

export type CrashStack = {
  /** The edge's origin, http://127.0.0.1:<port>. */
  origin: string;
  /** Anvil itself, for the test's reads and writes. */
  rpcUrl: string;
  /** The stack under it: its chain proxy, its chains. */
  testStack: TestStack;
  enclaves: CrashEnclave[];
  edgeOutput(): string;
  stop(): Promise<void>;
};

/**
 * Starts anvil, `enclaves` enclave instances (default 2), the Stripe emulator and the edge in front of
 * them all. The transactions tests (test/e2e/transactionsFollowed.test.ts) use it too: with a stoppable
 * proxy between the services and anvil (`chainProxy`), more chains to send to (`extraChains`, the
 * enclaves' and the edge's SIGIL_CHAINS) and edge settings of their own (`edgeVars`).
 */
export async function startCrashStack(
  options: {
    enclaves?: number;
    echo?: boolean;
    chainProxy?: boolean;
    extraChains?: Record<string, string>;
    edgeVars?: Record<string, string>;
    /** The enclaves anchor their receipts every this many seconds (test/harness/stack.ts). */
    anchorReceiptsEveryS?: number;
  } = {},
): Promise<CrashStack> {
  const count = options.enclaves ?? 2;
  const stateDir = mkdtempSync(join(tmpdir(), "sigil-budget-crash-"));
  let stack: TestStack | undefined;
  let stripe: StripeEmulator | undefined;
  let edge: EdgeProcess | undefined;
  const stop = async () => {
    await edge?.stop().catch(() => undefined);
    await stripe?.stop().catch(() => undefined);
    await stack?.stop().catch(() => undefined);
    rmSync(stateDir, { recursive: true, force: true });
  };
  try {
    stack = await startTestStack({
      ...(options.echo ? { echoEnclaveLogs: true } : {}),
      ...(options.chainProxy ? { chainProxy: true } : {}),
      ...(options.extraChains ? { extraChains: options.extraChains } : {}),
      ...(options.anchorReceiptsEveryS ? { anchorReceiptsEveryS: options.anchorReceiptsEveryS } : {}),
    });
    const first = stack;
    const enclaves: CrashEnclave[] = [
      { url: first.enclaveUrl, restart: () => first.restartEnclave(), output: () => first.enclaveOutput() },
    ];
    for (let i = 1; i < count; i++) {
      const extra = await first.spawnExtraEnclave({ instanceIndex: i });
      enclaves.push({ url: extra.url, restart: () => extra.restart(), output: () => extra.output() });
    }
    stripe = await startStripeEmulator();
    edge = await spawnEdge({
      port: await freePort(),
      stateDir,
      ...(options.echo ? { echo: (line: string) => console.log(`[edge] ${line}`) } : {}),
      vars: {
        SIGIL_ENV: "development",
        SIGIL_BILLING: "on",
        SIGIL_ENCLAVE_URLS: enclaves.map((e) => e.url).join(","),
        SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
        SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
        SIGIL_ALLOWED_COMPOSE_HASHES: createHash("sha256").update(readFileSync(DEV_APP_COMPOSE_PATH)).digest("hex"),
        SIGIL_RPC_URL: first.rpcUrl,
        SIGIL_PUBLIC_RPC_URL: first.rpcUrl,
        SIGIL_CHAIN_ID: "31337",
        SIGIL_CHAIN_NAME: "anvil",
        SIGIL_CONTRACT_ADDRESS: first.contract,
        STRIPE_SECRET_KEY: stripe.secretKey,
        STRIPE_PUBLISHABLE_KEY: stripe.publishableKey,
        STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
        STRIPE_API_BASE: stripe.url,
        // Every run in flight at once, from one address and key: the point is their contention on
        // one wallet's budget, not the edge's admission or rate limits (each tested on its own).
        SIGIL_EDGE_MAX_IN_FLIGHT: "0",
        SIGIL_RATE_LIMIT_PER_KEY: "1000000",
        SIGIL_RATE_LIMIT_PER_IP: "1000000",
        ...(first.chains ? { SIGIL_CHAINS: JSON.stringify(first.chains) } : {}),
        ...options.edgeVars,
      },
    });
    const started = edge;
    return {
      origin: started.url,
      rpcUrl: first.rpcUrl,
      testStack: first,
      enclaves,
      edgeOutput: () => started.output(),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * What the SDK sent for the runs: every attempt of a `sigil_action` call (its fetch is wrapped), by
 * Idempotency-Key, and the status of each answer (`network` for none).
 */
export class Traffic {
  readonly attemptsByKey = new Map<string, number>();
  readonly statuses = new Map<string, number>();
  /** Each call's answers in order (status, and the error code of a non-2xx one), by Idempotency-Key. */
  readonly history = new Map<string, string[]>();

  /** Attempts beyond each call's first. */
  get retries(): number {
    let n = 0;
    for (const a of this.attemptsByKey.values()) n += a - 1;
    return n;
  }

  readonly fetch: typeof globalThis.fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const key = new Headers(init?.headers).get("idempotency-key");
    const counted = url.endsWith("/sigil_action") && key !== null;
    if (counted) this.attemptsByKey.set(key, (this.attemptsByKey.get(key) ?? 0) + 1);
    try {
      const res = await globalThis.fetch(input, init);
      if (counted) {
        let code = "";
        if (!res.ok)
          code = await res
            .clone()
            .json()
            .then((b: { error?: { code?: string } }) => ` ${b.error?.code ?? "?"}`)
            .catch(() => " ?");
        this.#note(key, `${res.status}${code}`);
      }
      return res;
    } catch (err) {
      if (counted) this.#note(key, "network");
      throw err;
    }
  };

  #note(key: string, status: string): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    const seen = this.history.get(key);
    if (seen) seen.push(status);
    else this.history.set(key, [status]);
  }
}

/** The account, wallet and action the runs use. */
export type BudgetedWallet = {
  client: SigilClient;
  traffic: Traffic;
  wallet: Address;
  recipient: Address;
  /** The action: one transfer of TRANSFER_WEI to `recipient` at the nonce `js_params.nonce`. */
  code: string;
  capTransfers: number;
  capWei: bigint;
};

/** The action's script: signs one transfer at `nonce`; answers the signed transaction or the refusal. */
export function transferScript(recipient: Address): string {
  return `async function main({ wallet, nonce }) {
  try {
    const tx = await Sigil.Actions.signTransaction({ pkpId: wallet, transaction: {
      chainId: 31337, nonce, to: "${recipient}", value: "${TRANSFER_WEI}", gas: "21000",
      maxFeePerGas: "${MAX_FEE_WEI}", maxPriorityFeePerGas: "1" } });
    return { ok: true, tx };
  } catch (e) {
    return { ok: false, code: e.code, rule: e.details && e.details.rule, message: String(e.message) };
  }
}`;
}

/**
 * Makes an account through the SDK (whose calls are retried `retries` times), buys `topUpCents`
 * of credit (a run holds its whole timeout's seconds while in flight: 60 cents each by default),
 * makes a wallet, the action and a group of the two, and gives the wallet a guardrail that allows
 * transfers to a fresh recipient under a budget of `capTransfers` × TRANSFER_WEI a day. Then a
 * dry run per enclave, so that each has read the account before the crowd arrives.
 */
export async function setUpBudgetedWallet(
  origin: string,
  options: { capTransfers: number; topUpCents: number; enclaves: number; retries?: number },
): Promise<BudgetedWallet> {
  const traffic = new Traffic();
  const anon = createSigilClient({ baseUrl: origin, retries: options.retries ?? 30, fetch: traffic.fetch });
  const created = await anon.newAccount({ account_name: "budget crash" });
  const client = anon.with({ apiKey: created.api_key });
  await topUp(client, { amountCents: options.topUpCents });
  const wallet = (await client.createWallet({ name: "capped" })).wallet_address as Address;
  const recipient = privateKeyToAddress(generatePrivateKey());
  const code = transferScript(recipient);
  const cid = await client.getSigilActionIpfsId(code);
  await client.addAction({ action_ipfs_cid: cid, name: "transfer", description: "one 0.01 ETH transfer" });
  await client.addGroup({
    group_name: "capped",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  const capWei = TRANSFER_WEI * BigInt(options.capTransfers);
  await client.setWalletGuardrail({
    wallet_address: wallet,
    guardrail: {
      version: 1,
      transactions: { chains: [31337], max_value_wei: TRANSFER_WEI.toString(), transfers: { allow: [recipient] } },
      budgets: [{ name: BUDGET_NAME, window_seconds: 86_400, max_value_wei: capWei.toString() }],
    },
  });
  // The edge sends each request to the next enclave in turn: one dry run per enclave (and one more).
  for (let i = 0; i <= options.enclaves; i++) {
    const dry = await client.sigilAction({ code, js_params: { wallet, nonce: 0 }, dry_run: true });
    const request = dry.dry_run?.requests[0];
    if (!request?.allowed) throw new Error(`the warm-up dry run was refused: ${JSON.stringify(dry.dry_run)}`);
  }
  traffic.attemptsByKey.clear();
  traffic.statuses.clear();
  traffic.history.clear();
  return { client, traffic, wallet, recipient, code, capTransfers: options.capTransfers, capWei };
}

/** What became of one run. */
export type RunOutcome = {
  nonce: number;
  /** signed: the script got its transaction; refused: guardrail_denied; failed: anything else (the call threw, the run erred). */
  kind: "signed" | "refused" | "failed";
  tx?: Hex;
  rule?: string;
  /** Why a failed run failed; a refusal's message. */
  error?: string;
  /** The digests the run's receipt lists as signed, and as refused, for the wallet. */
  signedDigests: Hex[];
  refusedDigests: Hex[];
  /** `first_attempt.outcome`: what became of an earlier attempt that gave no answer. */
  firstAttempt?: string;
  attempts: number;
  /** What each attempt was answered (status and error code). */
  answers: string[];
};

/** A kill: which enclave, after how many answers, with how many runs in flight, and how long its restart took. */
export type Kill = { enclave: number; afterAnswers: number; inFlight: number; restartMs: number };

export type CrashRun = {
  outcomes: RunOutcome[];
  kills: Kill[];
  wallMs: number;
};

export type CrashRunOptions = {
  runs: number;
  concurrency: number;
  /** The answers after which each kill comes (kill k stops enclave k mod the enclaves' number). */
  killAfterAnswers: number[];
  /** A progress line every this many answers (0: none). */
  progressEvery?: number;
  log?: (line: string) => void;
};

/**
 * Sends `runs` runs, nonce 0…runs−1, `concurrency` at a time through the SDK, and kills enclaves
 * as `killAfterAnswers` says while they are in flight (one kill at a time: the next waits for the
 * restart). Resolves once every run has ended and every kill whose turn came is done.
 */
export async function driveCrashRuns(
  stack: CrashStack,
  setup: BudgetedWallet,
  options: CrashRunOptions,
): Promise<CrashRun> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const outcomes: RunOutcome[] = [];
  let next = 0;
  let inFlight = 0;
  let done = false;
  const counts = { signed: 0, refused: 0, failed: 0 };
  const progress = () =>
    `[${((Date.now() - started) / 1000).toFixed(1)} s] ${outcomes.length}/${options.runs} answered (signed ${counts.signed}, refused ${counts.refused}, failed ${counts.failed}), ${inFlight} in flight, ${setup.traffic.retries} retries`;

  const one = async (nonce: number): Promise<RunOutcome> => {
    const idempotencyKey = `budget-crash-${nonce}-${randomUUID()}`;
    const attempts = () => ({
      attempts: setup.traffic.attemptsByKey.get(idempotencyKey) ?? 0,
      answers: setup.traffic.history.get(idempotencyKey) ?? [],
    });
    try {
      const answer = await setup.client.sigilAction(
        { code: setup.code, js_params: { wallet: setup.wallet, nonce } },
        { idempotencyKey },
      );
      const mine = answer.receipt.wallets.filter((w) => w.address.toLowerCase() === setup.wallet.toLowerCase());
      const base = {
        nonce,
        signedDigests: mine.flatMap((w) => w.signed.map((s) => s.digest as Hex)),
        refusedDigests: mine.flatMap((w) => (w.refused ?? []).flatMap((r) => (r.digest ? [r.digest as Hex] : []))),
        ...(answer.first_attempt ? { firstAttempt: answer.first_attempt.outcome } : {}),
        ...attempts(),
      };
      const response = answer.response as { ok?: boolean; tx?: Hex; code?: string; rule?: string; message?: string };
      if (answer.has_error) return { ...base, kind: "failed", error: `run error ${JSON.stringify(answer.error)}` };
      if (response?.ok === true && typeof response.tx === "string") return { ...base, kind: "signed", tx: response.tx };
      if (response?.ok === false && response.code === "guardrail_denied")
        return {
          ...base,
          kind: "refused",
          ...(response.rule ? { rule: response.rule } : {}),
          ...(response.message ? { error: response.message } : {}),
        };
      return { ...base, kind: "failed", error: `unexpected response ${JSON.stringify(response)}` };
    } catch (err) {
      const error = isSigilError(err) ? `${err.status} ${err.code}: ${err.message}` : String(err);
      return { nonce, kind: "failed", error, signedDigests: [], refusedDigests: [], ...attempts() };
    }
  };

  const worker = async () => {
    while (next < options.runs) {
      const nonce = next++;
      inFlight++;
      const outcome = await one(nonce);
      inFlight--;
      outcomes.push(outcome);
      counts[outcome.kind]++;
      if (options.progressEvery && outcomes.length % options.progressEvery === 0) log(progress());
    }
  };

  const kills: Kill[] = [];
  const killer = async () => {
    for (const [k, after] of options.killAfterAnswers.entries()) {
      while (!done && outcomes.length < after) await new Promise((resolve) => setTimeout(resolve, 10));
      if (done) return;
      const enclave = k % stack.enclaves.length;
      const at = { afterAnswers: outcomes.length, inFlight };
      const t0 = Date.now();
      await stack.enclaves[enclave]!.restart();
      const kill = { enclave, ...at, restartMs: Date.now() - t0 };
      kills.push(kill);
      log(
        `killed enclave ${enclave} (SIGKILL) after ${kill.afterAnswers} answers with ${kill.inFlight} runs in flight; back in ${kill.restartMs} ms`,
      );
    }
  };

  const killing = killer();
  await Promise.all(Array.from({ length: Math.min(options.concurrency, options.runs) }, worker));
  done = true;
  await killing;
  if (options.progressEvery && outcomes.length % options.progressEvery !== 0) log(progress());
  outcomes.sort((a, b) => a.nonce - b.nonce);
  return { outcomes, kills, wallMs: Date.now() - started };
}

/** The signing hash of a signed transaction: keccak256 of its unsigned serialization. */
export function signingDigest(signed: Hex): Hex {
  const { r: _r, s: _s, v: _v, yParity: _y, ...unsigned } = parseTransaction(signed);
  return keccak256(serializeTransaction(unsigned)).toLowerCase() as Hex;
}

/** What the wallet's Budgets object holds, read by a dry run of one more transfer (which must be refused). */
export async function storeCounters(
  setup: BudgetedWallet,
  nonce: number,
): Promise<{ allowed: boolean; rule: string | null; usedSignatures: number; usedValueWei: bigint }> {
  const dry = await setup.client.sigilAction({
    code: setup.code,
    js_params: { wallet: setup.wallet, nonce },
    dry_run: true,
  });
  const request = dry.dry_run?.requests[0];
  if (!request) throw new Error(`the dry run asked for no signature: ${JSON.stringify(dry)}`);
  const cap = request.budgets?.before.find((b) => b.name === BUDGET_NAME);
  if (!cap) throw new Error(`the dry run shows no budget ${BUDGET_NAME}: ${JSON.stringify(request)}`);
  return {
    allowed: request.allowed,
    rule: request.rule,
    usedSignatures: cap.used_signatures,
    usedValueWei: BigInt(cap.used_value_wei),
  };
}

/**
 * Funds the wallet and broadcasts every signed transfer (its nonces are not consecutive: the
 * wallet's nonce is set to each one's first), each waited for; answers how many were mined and
 * what the recipient received.
 */
export async function broadcastTransfers(
  rpcUrl: string,
  setup: BudgetedWallet,
  txs: readonly Hex[],
): Promise<{ mined: number; recipientWei: bigint }> {
  const transport = http(rpcUrl);
  const chain = createPublicClient({ transport, pollingInterval: 20 });
  const test = createTestClient({ mode: "anvil", transport });
  const before = await chain.getBalance({ address: setup.recipient });
  await test.setBalance({ address: setup.wallet, value: parseEther("100") });
  const sorted = txs.map((tx) => ({ tx, nonce: parseTransaction(tx).nonce ?? 0 })).sort((a, b) => a.nonce - b.nonce);
  let mined = 0;
  for (const { tx, nonce } of sorted) {
    await test.setNonce({ address: setup.wallet, nonce });
    const hash = await chain.sendRawTransaction({ serializedTransaction: tx });
    const receipt = await chain.waitForTransactionReceipt({ hash });
    if (receipt.status === "success" && receipt.to?.toLowerCase() === setup.recipient.toLowerCase()) mined++;
  }
  return { mined, recipientWei: (await chain.getBalance({ address: setup.recipient })) - before };
}

/** The crash run's counts, each of which must be the cap exactly. */
export type CrashCount = {
  runs: number;
  signed: number;
  refused: number;
  failed: number;
  /** Distinct signed transactions the runs answered. */
  signedTxs: number;
  /** Distinct digests the receipts list as signed for the wallet. */
  receiptDigests: number;
  /** Whether those digests are the signed transactions' signing hashes, exactly. */
  digestsMatch: boolean;
  /** Refusals at another rule than budgets.<name> (the store not reached, say). */
  otherRefusals: string[];
  /** Runs answered after an earlier attempt gave none (first_attempt), by its outcome. */
  firstAttempts: Record<string, number>;
  retries: number;
  statuses: Record<string, number>;
  /** The wallet's Budgets object, read after. */
  store: { usedSignatures: number; usedValueWei: string; refusedNext: boolean };
  /** The chain, once every signed transfer is broadcast. */
  chain: { mined: number; recipientWei: string; overCapWei: string };
  kills: Kill[];
  wallMs: number;
  /** Whether every count is the cap and nothing failed. */
  exact: boolean;
};

/** Counts what the runs signed from their answers, their receipts, the Budgets object and the chain. */
export async function countCrash(stack: CrashStack, setup: BudgetedWallet, run: CrashRun): Promise<CrashCount> {
  const { outcomes } = run;
  const txs = [...new Set(outcomes.flatMap((o) => (o.tx ? [o.tx.toLowerCase() as Hex] : [])))];
  const receiptDigests = new Set(outcomes.flatMap((o) => o.signedDigests.map((d) => d.toLowerCase())));
  const txDigests = new Set(txs.map(signingDigest));
  const digestsMatch = receiptDigests.size === txDigests.size && [...txDigests].every((d) => receiptDigests.has(d));
  const store = await storeCounters(setup, outcomes.length);
  const chain = await broadcastTransfers(stack.rpcUrl, setup, txs);
  const firstAttempts: Record<string, number> = {};
  for (const o of outcomes)
    if (o.firstAttempt) firstAttempts[o.firstAttempt] = (firstAttempts[o.firstAttempt] ?? 0) + 1;
  const of = (kind: RunOutcome["kind"]) => outcomes.filter((o) => o.kind === kind).length;
  const cap = setup.capTransfers;
  const count: CrashCount = {
    runs: outcomes.length,
    signed: of("signed"),
    refused: of("refused"),
    failed: of("failed"),
    signedTxs: txs.length,
    receiptDigests: receiptDigests.size,
    digestsMatch,
    otherRefusals: outcomes.flatMap((o) =>
      o.kind === "refused" && o.rule !== `budgets.${BUDGET_NAME}` ? [`nonce ${o.nonce}: ${o.rule} (${o.error})`] : [],
    ),
    firstAttempts,
    retries: setup.traffic.retries,
    statuses: Object.fromEntries([...setup.traffic.statuses].sort()),
    store: {
      usedSignatures: store.usedSignatures,
      usedValueWei: store.usedValueWei.toString(),
      refusedNext: !store.allowed && store.rule === `budgets.${BUDGET_NAME}`,
    },
    chain: {
      mined: chain.mined,
      recipientWei: chain.recipientWei.toString(),
      overCapWei: (chain.recipientWei - setup.capWei).toString(),
    },
    kills: run.kills,
    wallMs: run.wallMs,
    exact: false,
  };
  count.exact =
    count.failed === 0 &&
    count.otherRefusals.length === 0 &&
    count.signed === cap &&
    count.signedTxs === cap &&
    count.receiptDigests === cap &&
    digestsMatch &&
    count.store.usedSignatures === cap &&
    store.usedValueWei === setup.capWei &&
    count.store.refusedNext &&
    count.chain.mined === cap &&
    chain.recipientWei === setup.capWei;
  return count;
}

/** The one-line summary. */
export function summaryLine(count: CrashCount, enclaves: number): string {
  const kills = count.kills
    .map((k) => `enclave ${k.enclave} after ${k.afterAnswers} answers, ${k.inFlight} in flight`)
    .join("; ");
  const statuses = Object.entries(count.statuses)
    .map(([s, n]) => `${n}×${s}`)
    .join(" ");
  const interrupted = Object.entries(count.firstAttempts)
    .map(([o, n]) => `${n} ${o}`)
    .join(", ");
  return (
    `budget crash: ${count.runs} runs over ${enclaves} enclaves, ${count.kills.length} kill(s) (${kills || "none"}); ` +
    `${count.retries} retries (answers: ${statuses}; first attempts: ${interrupted || "none"}); ` +
    `${count.signed} signed, ${count.refused} refused${count.otherRefusals.length > 0 ? ` (${count.otherRefusals.length} not at budgets.${BUDGET_NAME})` : ""}, ${count.failed} failed; ` +
    `receipts ${count.receiptDigests} digests, store ${count.store.usedSignatures} signatures, chain ${count.chain.mined} transfers, ` +
    `${count.chain.overCapWei} wei over the cap; ${(count.wallMs / 1000).toFixed(1)} s`
  );
}

/** Writes what every enclave and the edge printed, and every run's outcome, to `dir` (for a look after). */
export function writeCrashLogs(dir: string, stack: CrashStack, run?: CrashRun): void {
  mkdirSync(dir, { recursive: true });
  for (const [i, enclave] of stack.enclaves.entries()) writeFileSync(join(dir, `enclave-${i}.log`), enclave.output());
  writeFileSync(join(dir, "edge.log"), stack.edgeOutput());
  if (run) writeFileSync(join(dir, "outcomes.json"), `${JSON.stringify(run, null, 1)}\n`);
}
