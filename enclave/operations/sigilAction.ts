// `sigil_action`: authorize the caller's key for this exact code, run it in the sandbox, and
// authorize every wallet the script asks for as it asks (docs/design/keys-and-authz.md, Execution authorization).
// Every run that ran answers with its receipt (shared/receipt.ts), signed by this instance's receipt
// key: what ran, on what, what it answered and logged, every key it used and what each signed, when,
// and what it is charged (shared/fees.ts, from the seconds the edge's hold granted).
import { createHash } from "node:crypto";
import type { Address, Hex } from "viem";
import { canonicalCid, computeCid } from "../../shared/cid.ts";
import type { EnclaveResponse, ParsedEnclaveRequest } from "../../shared/operations.ts";
import { SigilError } from "../../shared/errors.ts";
import { runChargeCents } from "../../shared/fees.ts";
import { cidHash, toHash32 } from "../../shared/hashing.ts";
import { jsonSha256, RECEIPT_VERSION, textSha256, type SignedKind } from "../../shared/receipt.ts";
import type { WalletGrant } from "../authz/cache.ts";
import { KeyUses, type GuardrailDecision } from "../receipts/receipts.ts";
import { keyRef } from "../../shared/log.ts";
import type { KeyMaterial, KeyRequest, KeyUse, OfferedKey } from "../sandbox/hostOps.ts";
import { CodedError, type RunError } from "../sandbox/runtime.ts";
import { callerKey, readChain, type Enclave, type RequestContext } from "./context.ts";
import { decide, ZERO_HASH } from "../authz/guardrails.ts";
import type { DecodedCall, SignRequest } from "../../shared/guardrails/evaluate.ts";
import type { Budget, Guardrail as GuardrailDocument } from "../../shared/guardrails/schema.ts";
import type { GuardrailSubject } from "../../shared/guardrails/onChain.ts";
import { decodedRequest } from "../../shared/guardrails/request.ts";
import { Recent } from "../../shared/recent.ts";
import { BudgetUnavailableError, RunBudgets } from "../authz/budgets.ts";
import type { BudgetState } from "../../shared/guardrails/budgets.ts";
import { sendServices } from "./send.ts";
import { walletGrant } from "./walletGrant.ts";
import { SIGNER_CODE } from "../../shared/signerAction.ts";
import { delegationScope, useDelegation } from "../authz/delegation.ts";

/** Who a run is, as its keys are authorized: its key, account and code, and its side of the wallets' budgets. */
type RunSubject = {
  keyHash: bigint;
  master: bigint;
  actionHash: bigint;
  budgets?: RunBudgets;
  /** The usage key's own guardrail, which every signature of the run must also pass. */
  keyGuardrail?: Hex | null;
  /** A run through a delegated key: the wallets its chain lets it use (authz/delegation.ts), all when absent. */
  onlyWallets?: ReadonlySet<string>;
  /** Whether the run came through a delegated key (its keys are asked for one by one, never offered). */
  delegated?: boolean;
  /** A delegated key's blocks' budgets, each counted under its block's counter across every wallet. */
  blockBudgets?: ReadonlyArray<{ counter: string; budget: Budget }>;
};

/** How many scripts' CIDs and actions' hashes are remembered. */
const CID_CACHE_MAX = 10_000;
const cids = new Recent<string, string>(CID_CACHE_MAX);

/** The CIDv0 of the code, remembered by the code's SHA-256 (hashing is cheaper than the UnixFS import). */
async function cidOf(code: string): Promise<string> {
  const digest = createHash("sha256").update(code).digest("base64");
  return cids.get(digest) ?? cids.set(digest, await computeCid(code));
}

const actionHashes = new Recent<string, bigint>(CID_CACHE_MAX);

/** A CID's action hash (keccak256 of it), remembered: runs of one script ask for it again and again. */
function actionHashOf(cid: string): bigint {
  return actionHashes.getOrMake(cid, () => cidHash(cid));
}

/**
 * The wallets each (API key, action) had its keys for in its recent runs, and whether with their
 * encryption key: a run of the same script by the same key most often asks for the same wallets
 * again, so the enclave offers them with the run (offerKeys). Public data (hashes and addresses), a
 * bounded map; a hint is only ever a reason to look in the permission cache, never a grant.
 */
const HINTS_MAX = 10_000;
const walletHints = new Recent<string, Map<Address, boolean>>(HINTS_MAX);
/** At most this many wallets are offered to one run (a script that uses more asks for the others). */
const OFFERED_MAX = 4;

function noteHint(run: { keyHash: bigint; actionHash: bigint }, wallet: Address, encryption: boolean): void {
  const wallets = walletHints.getOrMake(`${run.keyHash}:${run.actionHash}`, () => new Map());
  if (wallets.get(wallet) === true || (!wallets.has(wallet) && wallets.size >= OFFERED_MAX)) return;
  wallets.set(wallet, encryption);
}

/**
 * The keys this run is likely to ask for, authorized and derived now: each hinted wallet whose grant
 * for this (key, action) the permission cache holds, live, and whose key derives to its address —
 * the checks a request from the script would make (provideKey), from the same cache, a few
 * milliseconds earlier. Nothing is read from the chain for an offer: a wallet whose grant is not
 * cached (a revocation dropped it, it expired) is not offered, and the script's request for it goes
 * the whole way. A signing run then gets its key in its own worker, without a round trip to this
 * thread (sandbox/worker.ts); the keys are zeroed when the run ends.
 */
function offerKeys(enclave: Enclave, run: RunSubject): OfferedKey[] {
  const wallets = walletHints.get(`${run.keyHash}:${run.actionHash}`);
  // A key with a guardrail of its own is offered no key: each of its run's signatures is checked.
  // Nor is a run through a delegated key: each use is checked against the chain's wallets as it is asked for.
  if (!wallets || run.keyGuardrail || run.delegated) return [];
  const offered: OfferedKey[] = [];
  for (const [wallet, encryption] of wallets) {
    const grant = enclave.cache.cachedWallet(run.keyHash, run.actionHash, wallet);
    // A guarded wallet's key is never offered: each of its signatures is checked as it is asked for.
    if (!grant?.allowed || grant.guardrail) continue;
    // One that does not derive to its address is not offered: the script's request meets the mismatch.
    const material = walletKey(enclave, run.master, wallet, grant.derivation, encryption);
    if (material) offered.push({ pkpId: wallet, material });
  }
  return offered;
}

/**
 * A wallet's key from (master, its on-chain derivation), or undefined (the derived key zeroed) when
 * it does not derive to the wallet's address; with its encryption key when asked, or its Solana key
 * (Ed25519 seed) instead when asked for that. The one place both a script's request (provideKey) and
 * an offer (offerKeys) make a wallet's key.
 */
function walletKey(
  enclave: Enclave,
  master: bigint,
  wallet: Address,
  derivation: bigint,
  encryption: boolean,
  solana = false,
): KeyMaterial | undefined {
  const derived = enclave.keyring.pkpKey(master, derivation);
  if (derived.address.toLowerCase() !== wallet) {
    derived.privateKey.fill(0);
    return undefined;
  }
  if (solana) {
    derived.privateKey.fill(0);
    return { privateKey: enclave.keyring.solanaKey(master, derivation).seed };
  }
  return encryption
    ? { privateKey: derived.privateKey, encryptionKey: enclave.keyring.pkpEncryptionKey(master, derivation) }
    : { privateKey: derived.privateKey };
}

/** Node's SHA-256, as the receipt's 0x-hex digests (a few times faster than the JavaScript one). */
const sha256Hex = (bytes: Uint8Array): Hex => `0x${createHash("sha256").update(bytes).digest("hex")}`;

/** How long a client should wait before asking again when the IPFS gateway failed. */
const IPFS_RETRY_AFTER_SECONDS = 5;

const ipfsUnavailable = (why: string, cause?: unknown) =>
  new SigilError("ipfs_unavailable", `the IPFS gateway ${why}; try again shortly`, {
    retryAfterSeconds: IPFS_RETRY_AFTER_SECONDS,
    cause,
  });

const codeTooLarge = (maxCodeBytes: number) =>
  new SigilError("payload_too_large", `the code behind ipfs_id is larger than ${maxCodeBytes} bytes`);

/**
 * The body of a gateway's answer, read chunk by chunk and abandoned (the connection closed) as soon
 * as it passes `maxBytes`: a gateway that sends an endless or oversized body costs at most the
 * limit plus one chunk of memory. A body that breaks off or outlasts the fetch's timeout is the
 * gateway failing, not the client's mistake.
 */
async function readAtMost(response: Response, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get("content-length") ?? NaN);
  if (declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw codeTooLarge(maxBytes);
  }
  if (!response.body) return new Uint8Array();
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw ipfsUnavailable("broke off or timed out while sending the code", err);
    }
    if (chunk.done) break;
    total += chunk.value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw codeTooLarge(maxBytes);
    }
    chunks.push(chunk.value);
  }
  return Buffer.concat(chunks, total);
}

/**
 * The service's own scripts, which the enclave serves by their CID without asking a gateway: the SDK's
 * signing action (shared/signerAction.ts), which toSigilAccount and the MCP tools run. Their bytes are
 * part of the enclave's attested code and their CIDs are computed from those bytes, so a run of one is
 * the run its CID names — with no gateway (`npm start` has none), or one that lost it.
 */
let builtIn: Promise<Map<string, string>> | undefined;
function builtInScripts(): Promise<Map<string, string>> {
  builtIn ??= Promise.all([SIGNER_CODE].map(async (code) => [await computeCid(code), code] as const)).then(
    (entries) => new Map(entries),
  );
  return builtIn;
}

/**
 * Fetches the code named by `cid` (canonical, already authorized for the caller) through the
 * configured gateway and keeps it only if its bytes hash to that CID. A gateway that cannot be
 * reached, times out or fails (5xx, 408, 429) is 503 `ipfs_unavailable`; one that has no such
 * content is 404.
 */
async function codeFromIpfs(enclave: Enclave, cid: string): Promise<string> {
  const builtIn = (await builtInScripts()).get(cid);
  if (builtIn !== undefined) return builtIn;
  const { ipfsGateway, ipfsTimeoutMs, limits } = enclave.config;
  let response: Response;
  try {
    response = await fetch(`${ipfsGateway}/ipfs/${cid}`, {
      signal: AbortSignal.timeout(ipfsTimeoutMs),
      redirect: "follow",
    });
  } catch (err) {
    throw ipfsUnavailable("could not be reached or did not answer in time", err);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => undefined);
    if (response.status >= 500 || response.status === 408 || response.status === 429)
      throw ipfsUnavailable(`answered ${response.status}`);
    throw new SigilError("not_found", `the IPFS gateway has no content for ${cid}`);
  }
  const bytes = await readAtMost(response, limits.maxCodeBytes);
  if ((await computeCid(bytes)) !== cid)
    throw new SigilError("invalid_request", "the content the gateway returned does not match ipfs_id");
  try {
    // The exact bytes the CID names: no replacement characters, no BOM dropped.
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new SigilError("invalid_request", "the content behind ipfs_id is not UTF-8 text, so it cannot be a script");
  }
}

export async function sigilAction(
  enclave: Enclave,
  input: ParsedEnclaveRequest<"sigil_action">,
  ctx: RequestContext,
): Promise<EnclaveResponse<"sigil_action">> {
  const { limits } = enclave.config;
  if (input.code !== undefined && Buffer.byteLength(input.code) > limits.maxCodeBytes) {
    throw new SigilError("payload_too_large", `code must be at most ${limits.maxCodeBytes} bytes`);
  }
  const paramsJson = JSON.stringify(input.js_params ?? null);
  if (Buffer.byteLength(paramsJson) > limits.maxJsParamsBytes) {
    throw new SigilError("payload_too_large", `js_params must serialize to at most ${limits.maxJsParamsBytes} bytes`);
  }
  const { keyHash, resolution: key, delegation } = await callerKey(enclave, input.api_key, { delegated: true });

  // The CID is known before any code is: from the code, or from ipfs_id itself (made canonical by
  // the request schema). A key that may not run it is refused before anything is fetched, so a
  // caller cannot make the enclave download what it is not allowed to run.
  const cid = input.code !== undefined ? await cidOf(input.code) : (input.ipfs_id as string);
  const actionHash = actionHashOf(cid);
  const { value: allowed } = await readChain(() => enclave.cache.canExecute(keyHash, actionHash));
  if (!allowed) {
    // Its author is told first that the code does not compile: allowing it would not make it run.
    if (input.code !== undefined)
      await refuseUncompiled(enclave, { code: input.code, cid }, ctx, timeoutMsOf(input, limits));
    throw new SigilError(
      "permission_denied",
      "the API key may not run this action: no group of its execute scope lists this CID",
      {
        details: { scope: "execute", cid },
      },
    );
  }
  const dry = input.dry_run === true;
  // A delegated key: its chain narrows the action and wallets, and each run counts a use at the edge.
  const scope = delegation ? await delegationScope(enclave.chain, delegation, { cid, actionHash }) : undefined;
  if (delegation) {
    if (!input.budget)
      throw new SigilError(
        "enclave_unavailable",
        "this run was sent without a way to count its delegated key's uses; nothing ran — try again",
        { retryAfterSeconds: 1 },
      );
    await useDelegation(input.budget, delegation, key.master, {
      deadline: Date.now() + timeoutMsOf(input, limits),
      allowHttp: enclave.config.env !== "production",
    });
  }
  const code = input.code ?? (await codeFromIpfs(enclave, cid));

  const timeoutMs = timeoutMsOf(input, limits);
  const log = ctx.log.child({ cid, key: keyRef(keyHash) });
  const uses = new KeyUses();
  const run: RunSubject = {
    keyHash,
    master: key.master,
    actionHash,
    keyGuardrail: key.guardrail ?? null,
    ...(delegation ? { delegated: true } : {}),
    ...(scope?.wallets ? { onlyWallets: scope.wallets } : {}),
    ...(delegation?.effective.budgets.length
      ? {
          blockBudgets: delegation.effective.budgets.map(({ id, ...b }) => ({
            counter: delegation.counters[delegation.token.blocks.findIndex((block) => block.id === id)] as string,
            budget: { name: "budget", ...b } as Budget,
          })),
        }
      : {}),
    budgets: new RunBudgets({
      access: input.budget,
      // Outside production the edge may be reached over plain http (wrangler dev, the tests).
      allowHttp: enclave.config.env !== "production",
      runner: { account: toHash32(key.master), keyHash: toHash32(keyHash), cid },
      dry,
      deadline: Date.now() + timeoutMsOf(input, limits),
    }),
  };
  const dryRequests: DryRunRequest[] = [];
  const keys = async (request: KeyRequest): Promise<KeyMaterial> => {
    if (dry && request.use) return dryRunKey(enclave, run, request, dryRequests);
    let provided: Awaited<ReturnType<typeof provideKey>>;
    try {
      provided = await provideKey(enclave, run, request);
    } catch (err) {
      // A guardrail's refusal is on the record: the receipt says what was asked and which rule refused it.
      const refusal = guardrailRefusal(err);
      if (refusal && request.kind === "wallet" && request.use)
        uses.refused(request.pkpId.toLowerCase() as Address, request.use, refusal);
      throw err;
    }
    uses.note(provided.address, request.kind === "action", request.use, provided.decision);
    if (request.kind === "wallet" && !request.solana) noteHint(run, provided.address, request.encryption);
    return provided.material;
  };
  const offer = {
    // A dry run is offered no keys: each signing use goes the whole way, to be decided and recorded.
    keys: dry ? [] : offerKeys(enclave, run),
    onUse: (pkpId: string, use: KeyUse | undefined) => uses.note(pkpId as Address, false, use),
  };
  const startedAt = new Date();
  const outcome = await enclave.sandbox.run(
    {
      code,
      cid,
      paramsJson,
      timeoutMs,
      requestId: ctx.requestId,
      correlationId: ctx.correlationId,
      ...(dry ? { dryRun: true as const } : {}),
    },
    keys,
    offer.keys.length > 0 ? offer : undefined,
    sendServices(enclave, {
      keyHash,
      master: key.master,
      actionHash,
      ...(scope?.wallets ? { onlyWallets: scope.wallets } : {}),
      access: input.budget,
      dry,
      deadline: Date.now() + timeoutMs,
    }),
  );
  const endedAt = new Date();
  const durationMs = Math.round(outcome.durationMs);
  log.info("run finished", { durationMs, error: outcome.error?.code ?? null });
  // Code that does not compile never ran: a 400 (the edge frees its hold), no receipt, no charge.
  if (outcome.error?.code === "compile_error") throw compileRefusal(outcome.error, cid);
  const response = outcome.responseJson === undefined ? null : (JSON.parse(outcome.responseJson) as unknown);
  const receipt = await enclave.receipts.sign({
    version: RECEIPT_VERSION,
    request_id: ctx.requestId,
    account: toHash32(key.master),
    cid,
    params_sha256: jsonSha256(input.js_params, sha256Hex),
    response_sha256: jsonSha256(response, sha256Hex),
    logs_sha256: textSha256(outcome.logs, sha256Hex),
    has_error: outcome.error !== undefined,
    wallets: uses.list(),
    started_at: startedAt.toISOString(),
    ended_at: endedAt.toISOString(),
    duration_ms: durationMs,
    charged_cents: runChargeCents(durationMs, input.billing?.granted_seconds),
    ...(dry ? { dry_run: true as const } : {}),
    ...(delegation
      ? { delegation: { root: toHash32(keyHash), blocks: delegation.token.blocks.map((b) => b.id) } }
      : {}),
  });
  // Billing on: the run's charge is settled from here too, should its edge not commit it (receipts/settlements.ts).
  if (input.budget && input.billing && enclave.settlements)
    enclave.settlements.add(input.budget, receipt.charged_cents, {
      cid,
      duration_ms: durationMs,
      ...(outcome.error ? { error_code: outcome.error.code } : {}),
      receipt: JSON.stringify(receipt),
    });
  return {
    response,
    logs: outcome.logs,
    has_error: outcome.error !== undefined,
    ...(outcome.error ? { error: outcome.error } : {}),
    cid,
    duration_ms: durationMs,
    receipt,
    ...(dry
      ? {
          dry_run: {
            requests: dryRequests,
            would_cost_cents: runChargeCents(durationMs, input.billing?.granted_seconds),
          },
        }
      : {}),
  };
}

/** One signing use a dry run's script asked for, and what came of it (docs/design/guardrails.md, The dry run). */
type DryRunRequest = {
  wallet: Address;
  action: boolean;
  kind: SignedKind | "export";
  digest: Hex | null;
  allowed: boolean;
  rule: string | null;
  reason?: string;
  observed?: string;
  guardrail: Hex | null;
  /** A refusal that is not a guardrail's (the wallet not usable by this key and code): its code. */
  code?: string;
  /** What was asked, as a person reads it (shared/guardrails/request.ts). */
  decoded?: Record<string, unknown>;
  /** The wallet's budgets before and after this signature, as if the run had been real. */
  budgets?: { before: BudgetState[]; after: BudgetState[] };
};

/**
 * A dry run's signing use: authorized and checked against the wallet's guardrail as a run's would
 * be, recorded, and answered with no key (the worker answers the script with a stand-in). A refusal
 * is recorded and reaches the script as in a run.
 */
async function dryRunKey(
  enclave: Enclave,
  run: RunSubject,
  request: KeyRequest,
  record: DryRunRequest[],
): Promise<KeyMaterial> {
  const use = request.use as KeyUse;
  const asked = {
    action: request.kind === "action",
    kind: use.kind,
    digest: use.kind === "export" ? null : use.digest,
  };
  const decoded = (call?: DecodedCall) => {
    const d = request.signs ? decodedRequest(request.signs, call) : undefined;
    return d ? { decoded: d } : {};
  };
  if (request.kind === "action") {
    const derived = enclave.keyring.actionKey(actionCid(request.cid));
    derived.privateKey.fill(0);
    record.push({ wallet: derived.address, ...asked, allowed: true, rule: null, guardrail: null, ...decoded() });
    return { privateKey: new Uint8Array(0) };
  }
  const wallet = request.pkpId.toLowerCase() as Address;
  try {
    const { decision } = await authorizeWallet(enclave, run, wallet, request);
    record.push({
      wallet,
      ...asked,
      allowed: true,
      rule: decision?.rule ?? null,
      guardrail: decision?.guardrail ?? null,
      ...(decision?.budgets ? { budgets: decision.budgets } : {}),
      ...decoded(decision?.call),
    });
  } catch (err) {
    if (err instanceof CodedError) {
      const d = err.scriptDetails as
        | {
            rule?: string;
            reason?: string;
            observed?: string;
            guardrail?: Hex;
            call?: DecodedCall;
            budgets?: DryRunRequest["budgets"];
          }
        | undefined;
      record.push({
        wallet,
        ...asked,
        allowed: false,
        rule: d?.rule ?? null,
        ...(d?.reason === undefined ? {} : { reason: d.reason }),
        ...(d?.observed === undefined ? {} : { observed: d.observed }),
        guardrail: d?.guardrail ?? null,
        ...(d?.budgets ? { budgets: d.budgets } : {}),
        ...(err.scriptCode === "guardrail_denied"
          ? {}
          : { code: err.scriptCode ?? "invalid_request", reason: err.message }),
        ...decoded(d?.call),
      });
    }
    throw err;
  }
  return { privateKey: new Uint8Array(0) };
}

/** Whose guardrail a check is of: a wallet's, or the run's usage key's own (docs/design/guardrails.md). */
type Whose = {
  subject: GuardrailSubject;
  /** Whose budget counters: the wallet's address, or "key:0x…". */
  counters: string;
  /** What the rules are called in decisions and receipts: "" for a wallet's, "usage_key." for a key's. */
  prefix: string;
  /** In messages: "wallet 0x…'s guardrail", "the usage key's guardrail". */
  name: string;
};

const walletWhose = (wallet: Address): Whose => ({
  subject: { wallet },
  counters: wallet,
  prefix: "",
  name: `wallet ${wallet}'s guardrail`,
});
/** A delegated key's block, whose budget counts every signature of the runs through it (authz/delegation.ts). */
const blockWhose = (keyHash: bigint, counter: string): Whose => ({
  subject: { usageKey: keyHash },
  counters: `delegation:${counter}`,
  prefix: "delegation.",
  name: "the delegated key's budget",
});
const keyWhose = (keyHash: bigint): Whose => ({
  subject: { usageKey: keyHash },
  counters: `key:${toHash32(keyHash)}`,
  prefix: "usage_key.",
  name: "the usage key's guardrail",
});

/** A guardrail that allowed a request: the decision, and its budgets, still to be reserved. */
type Allowed = { decision: GuardrailDecision; whose: Whose; budgets: GuardrailDocument["budgets"] };

/**
 * Refuses a signature (or the key's export) that a guardrail does not allow, before the key is made:
 * the script's call fails with `guardrail_denied`, its details the rule and what was seen, and the run
 * goes on. Uses of the key that sign nothing (its public key, encryption) pass. Budgets are reserved
 * after every guardrail of the request allowed it (reserveBudgets).
 */
async function checkGuardrail(
  enclave: Enclave,
  run: RunSubject,
  whose: Whose,
  hash: Hex,
  request: KeyRequest,
): Promise<Allowed> {
  let loaded;
  try {
    loaded = await enclave.guardrails.load(run.master, whose.subject, hash);
  } catch {
    throw new CodedError("chain_unavailable", `the chain could not be reached to read ${whose.name}; try again`);
  }
  const decision = decide(loaded, request.signs);
  if (decision.allowed)
    return {
      decision: {
        guardrail: hash,
        rule: whose.prefix + decision.rule,
        ...(decision.call ? { call: decision.call } : {}),
      },
      whose,
      budgets: "compiled" in loaded ? loaded.compiled.document.budgets : undefined,
    };
  const seen = decision.observed === undefined ? "" : ` (seen: ${decision.observed})`;
  throw new CodedError(
    "guardrail_denied",
    `${whose.name} refused this at ${whose.prefix}${decision.rule}: ${decision.reason}${seen}`,
    "Error",
    { guardrail: hash, ...decision, rule: whose.prefix + decision.rule },
  );
}

/**
 * Reserves room for a signature a guardrail allowed in its budgets (a dry run: reads them), before
 * the key is made. No room, or no answer from the store, refuses it as the guardrail would:
 * guardrail_denied at `budgets.<name>` (or `budgets`), with what the budget holds. Answers the
 * budgets' counters before and after it.
 */
async function reserveBudgets(
  run: RunSubject,
  allowed: Allowed,
  signer: Address,
  signs: SignRequest,
  signedDigest: Hex | undefined,
): Promise<{ before: BudgetState[]; after: BudgetState[] } | undefined> {
  const { decision, whose, budgets } = allowed;
  if (!budgets?.length) return undefined;
  const refuse = (rule: string, reason: string, more: Record<string, unknown>) =>
    new CodedError("guardrail_denied", `${whose.name} refused this at ${rule}: ${reason}`, "Error", {
      guardrail: decision.guardrail,
      allowed: false,
      rule,
      ...more,
      ...callOf(decision),
    });
  let outcome;
  try {
    if (!run.budgets) throw new BudgetUnavailableError("this run has no way to reach the budgets' store");
    outcome = await run.budgets.reserve(whose.counters, signer, budgets, signs, signedDigest);
  } catch (err) {
    if (!(err instanceof BudgetUnavailableError)) throw err;
    throw refuse(`${whose.prefix}budgets`, `${err.message}; nothing was signed`, { reason: err.message });
  }
  if (outcome.granted) return { before: outcome.before, after: outcome.after };
  throw refuse(`${whose.prefix}budgets.${outcome.budget}`, `${outcome.reason} (seen: ${outcome.observed})`, {
    reason: outcome.reason,
    observed: outcome.observed,
    budgets: { before: outcome.before, after: outcome.before },
  });
}

const callOf = (d: GuardrailDecision) => (d.call ? { call: d.call } : {});

/** The run's time limit: the caller's (the edge sets it to the seconds its hold granted), at most the maximum. */
function timeoutMsOf(input: ParsedEnclaveRequest<"sigil_action">, limits: Enclave["config"]["limits"]): number {
  return Math.min(input.timeout_ms ?? limits.timeoutMs, limits.maxTimeoutMs);
}

/** The 400 answer for code that does not compile: the parser's message, where it stopped, the code's CID. */
function compileRefusal(error: RunError, cid: string): SigilError {
  const at = error.line === undefined ? "" : ` (line ${error.line}, column ${error.column})`;
  return new SigilError("compile_error", `the script does not compile: ${error.message}${at}`, {
    details: { cid, ...(error.line === undefined ? {} : { line: error.line, column: error.column }) },
  });
}

/**
 * Throws the compile error of code the caller may not run, compiled in the sandbox and not run (no
 * key is given to it). Anything else — it compiles, or the sandbox cannot take it now — leaves the
 * caller's answer the authorization's 403.
 */
async function refuseUncompiled(
  enclave: Enclave,
  script: { code: string; cid: string },
  ctx: RequestContext,
  timeoutMs: number,
): Promise<void> {
  const noKeys = async (): Promise<KeyMaterial> => {
    throw new CodedError("permission_denied", "a compile check holds no keys");
  };
  let outcome;
  try {
    outcome = await enclave.sandbox.run(
      {
        ...script,
        paramsJson: "null",
        timeoutMs,
        requestId: ctx.requestId,
        correlationId: ctx.correlationId,
        compileOnly: true,
      },
      noKeys,
    );
  } catch {
    return;
  }
  if (outcome.error?.code === "compile_error") throw compileRefusal(outcome.error, script.cid);
}

/**
 * A key for one operation of a run: a wallet is checked for this (key, code) through the cache,
 * re-derived from (master, on-chain derivation), and refused unless it derives to the address the
 * script named. Action identity keys need no grant: they belong to the code, not to an account.
 */
async function provideKey(
  enclave: Enclave,
  run: RunSubject,
  request: KeyRequest,
): Promise<{ material: KeyMaterial; address: Address; decision?: GuardrailDecision }> {
  if (request.kind === "action") {
    const derived = enclave.keyring.actionKey(actionCid(request.cid));
    return { material: { privateKey: derived.privateKey }, address: derived.address };
  }
  // Lowercase, not checksummed: the checksum is a keccak256 per operation, and nothing here needs it.
  const wallet = request.pkpId.toLowerCase() as Address;
  const { grant, decision } = await authorizeWallet(enclave, run, wallet, request);
  const material = walletKey(enclave, run.master, wallet, grant.derivation, request.encryption, request.solana);
  if (!material)
    throw new CodedError("wallet_key_mismatch", `the key derived for wallet ${wallet} does not match its address`);
  return { material, address: wallet, ...(decision ? { decision } : {}) };
}

/**
 * A Solana transaction's request with the wallet's Solana address as its signer, which its
 * guardrail's budgets of lamports read; one the wallet is not a signer of gets no signature, refused
 * here before any guardrail counts it or the run's receipt records it as made.
 */
async function solanaSigned(
  enclave: Enclave,
  run: RunSubject,
  grant: WalletGrant,
  request: KeyRequest,
): Promise<KeyRequest> {
  if (request.kind !== "wallet" || !request.solana || request.signs?.kind !== "solana_transaction") return request;
  const address = enclave.keyring.solanaAddress(run.master, grant.derivation);
  if (!(await solanaSignersOf(request.signs.message)).includes(address))
    throw new CodedError(
      "script_error",
      `signSolanaTransaction: the transaction does not name the wallet's Solana address ${address} among its signers`,
    );
  return { ...request, signs: { ...request.signs, signer: address } };
}

let solanaKit: Promise<typeof import("@solana/kit")> | undefined;

/** The signers a compiled Solana transaction message names (its first static accounts), or none when it is not one. */
async function solanaSignersOf(message: Uint8Array): Promise<string[]> {
  const kit = await (solanaKit ??= import("@solana/kit"));
  try {
    const compiled = kit.getCompiledTransactionMessageDecoder().decode(message);
    return compiled.staticAccounts.slice(0, compiled.header.numSignerAccounts);
  } catch {
    return [];
  }
}

/**
 * The identity of a CID is that of its canonical form: a script asking for its own CID's CIDv1
 * (bafy…) gets its own identity, as a grant in that form authorizes its runs.
 */
function actionCid(cid: string): string {
  try {
    return canonicalCid(cid);
  } catch (err) {
    throw new CodedError(
      "script_error",
      `cid ${JSON.stringify(cid)} names no script, so it has no action identity: ${(err as Error).message}`,
    );
  }
}

/**
 * Whether this run (key, code) may use `wallet` for `request`: its grant from the permission cache,
 * and, for a guarded wallet, the guardrail's decision (a refusal throws guardrail_denied). A use
 * that signs nothing (its public key, encryption) passes a guardrail; the receipt still names it.
 */
async function authorizeWallet(
  enclave: Enclave,
  run: RunSubject,
  wallet: Address,
  request: KeyRequest,
): Promise<{ grant: WalletGrant; decision: GuardrailDecision | undefined }> {
  const grant = await walletGrant(enclave, run, wallet);
  if (!request.use) return { grant, decision: grant.guardrail ? { guardrail: grant.guardrail, rule: "" } : undefined };
  // A wallet's private key would outlive a delegated key and sign past all its bounds.
  if (run.delegated && request.use.kind === "export")
    throw new CodedError(
      "permission_denied",
      "a delegated key may not read a wallet's private key: it would sign past the key's expiry, uses and budgets",
    );
  request = await solanaSigned(enclave, run, grant, request);
  // Every guardrail of the request decides first — the wallet's, then the key's own — and only then
  // are their budgets reserved, so that a request one of them refuses is counted in none.
  const allowed: Allowed[] = [];
  if (grant.guardrail) allowed.push(await checkGuardrail(enclave, run, walletWhose(wallet), grant.guardrail, request));
  if (run.keyGuardrail)
    allowed.push(await checkGuardrail(enclave, run, keyWhose(run.keyHash), run.keyGuardrail, request));
  // A delegated key's blocks' budgets are the narrowest: counted before the key's and the wallet's.
  const blocks: Allowed[] = (run.blockBudgets ?? []).map(({ counter, budget }) => ({
    decision: { guardrail: ZERO_HASH, rule: "delegation.budget" },
    whose: blockWhose(run.keyHash, counter),
    budgets: [budget],
  }));
  if (blocks.length > 0 && !request.signs)
    throw new CodedError(
      "guardrail_denied",
      "the delegated key's budget cannot count a request that does not say what it signs",
    );
  if (allowed.length === 0 && blocks.length === 0) return { grant, decision: undefined };
  const budgets = { before: [] as BudgetState[], after: [] as BudgetState[] };
  // The key's own budgets first: a request the key's budget refuses is counted in no wallet's, so a
  // narrowed key cannot use up a wallet's budget for everyone else with requests refused for its own.
  // The deepest block is reserved first: a request a later (narrower) block refuses is counted in no earlier one.
  for (const a of [...blocks.reverse(), ...[...allowed].reverse()]) {
    const signed = request.use?.kind === "export" ? undefined : request.use?.digest;
    const counted = request.signs ? await reserveBudgets(run, a, wallet, request.signs, signed) : undefined;
    budgets.before.push(...(counted?.before ?? []));
    budgets.after.push(...(counted?.after ?? []));
  }
  // The receipt names the wallet's guardrail and its rule; a key-only decision, the key's (its rules under usage_key.).
  // A signature only a delegated key's budget counted names no guardrail.
  if (allowed.length === 0) return { grant, decision: undefined };
  const first = (allowed[0] as Allowed).decision;
  return { grant, decision: { ...first, ...(budgets.before.length ? { budgets } : {}) } };
}

/** The guardrail's refusal an error carries (checkGuardrail's), if it is one. */
function guardrailRefusal(err: unknown): GuardrailDecision | undefined {
  if (!(err instanceof CodedError) || err.scriptCode !== "guardrail_denied") return undefined;
  const details = err.scriptDetails as { guardrail?: Hex; rule?: string } | undefined;
  return details?.guardrail && details.rule ? { guardrail: details.guardrail, rule: details.rule } : undefined;
}
