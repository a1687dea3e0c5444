// The wallets' guardrails, as this enclave instance checks them (docs/design/guardrails.md). The
// permission cache's grant names the guardrail's hash (AccountConfig keeps the hash and the block
// whose WalletGuardrailSet event holds the document's bytes); the document is read from that one
// block's logs, its keccak256 checked against the hash, parsed and compiled once, and kept by hash:
// content-addressed, it never changes, so nothing here is ever stale — a new guardrail is a new hash
// in a new grant, which the chain listener's invalidation brings.
//
// A document that cannot be read or does not hold together (a ChainSecured admin may write any bytes
// to the contract) refuses every signature of its wallet, saying why: deny by default.
import type { Hex } from "viem";
import {
  compileGuardrail,
  type CompiledGuardrail,
  type Decision,
  type SignRequest,
} from "../../shared/guardrails/evaluate.ts";
import { Recent } from "../../shared/recent.ts";
import type { GuardrailSubject } from "../../shared/guardrails/onChain.ts";

/** Where a guardrail document is — a wallet's, or a usage key's own: its hash and the block whose event holds its bytes. */
export type GuardrailSource = {
  /** The subject's current guardrail hash and block (0x0…, 0 for none). */
  locate(master: bigint, subject: GuardrailSubject): Promise<{ hash: Hex; block: bigint }>;
  /** The document the subject's event carried in `block` whose bytes hash to `hash` (shared/guardrails/onChain.ts). */
  document(at: { master: bigint; block: bigint; hash: Hex } & GuardrailSubject): Promise<string | undefined>;
};

/** A guardrail whose document cannot be used: every signature is refused with `reason`. */
type Broken = { broken: string };

export type LoadedGuardrail = { hash: Hex; compiled: CompiledGuardrail } | ({ hash: Hex } & Broken);

export const ZERO_HASH: Hex = `0x${"0".repeat(64)}`;

const MAX_KEPT = 10_000;

export class GuardrailStore {
  readonly #source: GuardrailSource;
  readonly #byHash = new Recent<Hex, LoadedGuardrail>(MAX_KEPT);
  readonly #inflight = new Map<Hex, Promise<LoadedGuardrail>>();

  constructor(source: GuardrailSource) {
    this.#source = source;
  }

  /** The guardrail `hash` of `subject` (master's wallet, or usage key), compiled; loaded from the chain at its first use. */
  async load(master: bigint, subject: GuardrailSubject, hash: Hex): Promise<LoadedGuardrail> {
    const kept = this.#byHash.get(hash);
    if (kept) return kept;
    let loading = this.#inflight.get(hash);
    if (!loading) {
      loading = this.#fetch(master, subject, hash).finally(() => this.#inflight.delete(hash));
      this.#inflight.set(hash, loading);
    }
    return loading;
  }

  async #fetch(master: bigint, subject: GuardrailSubject, hash: Hex): Promise<LoadedGuardrail> {
    // Errors reading the chain propagate (the caller answers chain_unavailable, nothing is kept);
    // what the chain says is kept, a broken document too (it is broken for good under its hash).
    const located = await this.#source.locate(master, subject);
    if (located.hash.toLowerCase() !== hash.toLowerCase()) {
      // Changed since the grant was read: the grant is stale and the listener is about to drop it.
      // Not kept: the document under this hash may be set again, and is not broken.
      return { hash, broken: "the guardrail changed while this run asked for it; try again" };
    }
    const document = await this.#source.document({ master, ...subject, block: located.block, hash });
    let loaded: LoadedGuardrail;
    if (document === undefined) loaded = { hash, broken: "the guardrail's document was not found on chain" };
    else {
      try {
        loaded = { hash, compiled: compileGuardrail(JSON.parse(document)) };
      } catch (err) {
        loaded = {
          hash,
          broken: `the guardrail does not hold together: ${(err as Error).message.split("\n")[0]}`,
        };
      }
    }
    this.#byHash.set(hash, loaded);
    return loaded;
  }
}

/** The decision of a loaded guardrail on `request` (a broken one refuses everything). */
export function decide(guardrail: LoadedGuardrail, request: SignRequest | undefined): Decision {
  if ("broken" in guardrail) return { allowed: false, rule: "guardrail", reason: guardrail.broken };
  if (!request) return { allowed: false, rule: "guardrail", reason: "the request did not say what it signs" };
  return guardrail.compiled.check(request);
}
