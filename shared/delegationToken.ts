// Delegated keys (docs/design/delegation.md): the token algebra — what a delegated
// key is, how it is made narrower, and how the enclave checks it. The enclave, the only holder of the
// secret a chain starts from, mints a first child for a usage key allowed to delegate; any holder of a
// delegated key can then add a block of caveats to it (no call, no chain write); the enclave checks
// the whole chain at use.
//
// A delegated key is `sgd_` and the base64url of its token's canonical JSON:
//   { v: 1, root: <the usage key's hash>, blocks: [block, …], tag: <32 bytes hex> }
// where tag = HMAC(… HMAC(HMAC(secret, block₀), block₁) …, blockₙ) over each block's canonical JSON,
// and secret is the chain's secret, which the enclave derives from its root key for the usage key `root`
// (enclave/keys/derive.ts, delegationSecret) and nobody else holds.
// - Not forged: tag₀ needs the secret, which only the enclave derives.
// - Not widened: a block cannot be taken out or changed (every later tag depends on it), and every
//   block holds at once — a later block only narrows. `attenuate` refuses a block wider than the
//   chain (a clear error for the person making it); `effective` intersects whatever it is given.
// - Not replayed past its bounds: `expires_at` and `max_uses` are per block; uses are counted, and
//   revocations kept, by block id (the store at the edge), and the root usage key is checked on chain.
//
// Free of zod, so the SDK's offline `attenuateKey` stays small: a block is checked by `blockProblem`,
// which delegation.test.ts holds to the zod schema the API states (delegation.ts) on every case.
import { hmac } from "@noble/hashes/hmac";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils";
import { canonicalJson } from "./canonicalJson.ts";

/** What a delegated key starts with: never an API key's format (44 base64 characters). */
export const DELEGATED_KEY_PREFIX = "sgd_";
/** The most blocks a chain may have: a child of a child … eight deep. */
export const MAX_DEPTH = 8;
/**
 * The longest a delegated key's text may be: it travels in a header, and a request's headers are
 * limited (32 KiB at Cloudflare). Minting or narrowing past it is refused (DelegationError "size").
 */
export const MAX_DELEGATED_KEY_CHARS = 16_384;
/** The most entries a block's list may name. */
export const MAX_LIST = 64;

/** One block of caveats: each present field narrows; an absent one leaves the chain's as it is (schema: delegation.ts). */
export type DelegationBlock = {
  id: string;
  expires_at?: number;
  max_uses?: number;
  groups?: string[];
  actions?: string[];
  wallets?: string[];
  budget?: { window_seconds: number; max_value_wei?: string; max_signatures?: number };
  delegate?: false;
};

/** A delegated key's token. */
export type DelegationToken = { v: 1; root: string; blocks: DelegationBlock[]; tag: string };

/** A block's caveats, as given to mint or attenuate (its id is made then). */
export type Caveats = Omit<DelegationBlock, "id">;

/** Why a delegated key cannot be made or read: which dimension, in words. */
export class DelegationError extends Error {
  override name = "DelegationError";
  readonly dimension: string;
  constructor(dimension: string, message: string) {
    super(message);
    this.dimension = dimension;
  }
}

function extend(tag: Uint8Array, block: DelegationBlock): Uint8Array {
  return hmac(sha256, tag, utf8ToBytes(canonicalJson(block)));
}

function newBlock(caveats: Caveats): DelegationBlock {
  const block = { ...caveats, id: bytesToHex(randomBytes(16)) } as DelegationBlock;
  const problem = blockProblem(block);
  if (problem) throw new DelegationError(problem.dimension, problem.message);
  return block;
}

const DECIMAL = /^(0|[1-9][0-9]{0,77})$/;
/** A group id: a decimal u64, as the contract's. */
const isGroupId = (x: unknown) =>
  typeof x === "string" && /^(0|[1-9][0-9]{0,19})$/.test(x) && BigInt(x) <= 0xffff_ffff_ffff_ffffn;
/** The longest window a block's budget may count (the Budgets store keeps no row longer): 30 days. */
export const MAX_BLOCK_BUDGET_WINDOW_SECONDS = 30 * 86_400;
const BLOCK_FIELDS = new Set(["id", "expires_at", "max_uses", "groups", "actions", "wallets", "budget", "delegate"]);
const isInt = (v: unknown, min: number, max: number) =>
  Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;

function listProblem(v: unknown, ok: (x: unknown) => boolean): boolean {
  return !Array.isArray(v) || v.length > MAX_LIST || !v.every(ok);
}

/**
 * Why `value` is not a block of caveats (its dimension and a message), or undefined when it is one:
 * the rules of delegationBlockSchema (delegation.ts), without zod.
 */
export function blockProblem(value: unknown): { dimension: string; message: string } | undefined {
  const bad = (dimension: string, message: string) => ({ dimension, message: `${dimension}: ${message}` });
  if (typeof value !== "object" || value === null || Array.isArray(value)) return bad("block", "must be an object");
  const b = value as Record<string, unknown>;
  const unknownField = Object.keys(b).find((k) => !BLOCK_FIELDS.has(k));
  if (unknownField !== undefined) return bad(unknownField, "is not a caveat");
  if (typeof b.id !== "string" || !/^[0-9a-f]{32}$/.test(b.id)) return bad("id", "must be 16 bytes of lowercase hex");
  if (b.expires_at !== undefined && !isInt(b.expires_at, 1, Number.MAX_SAFE_INTEGER))
    return bad("expires_at", "must be unix seconds");
  if (b.max_uses !== undefined && !isInt(b.max_uses, 1, 1_000_000_000))
    return bad("max_uses", "must be a whole number from 1 to 1000000000");
  if (b.groups !== undefined && listProblem(b.groups, isGroupId))
    return bad("groups", `must be at most ${MAX_LIST} group ids as decimal strings (64-bit)`);
  if (
    b.actions !== undefined &&
    listProblem(b.actions, (x) => typeof x === "string" && x.length >= 1 && x.length <= 128)
  )
    return bad("actions", `must be at most ${MAX_LIST} CIDs`);
  if (b.wallets !== undefined && listProblem(b.wallets, (x) => typeof x === "string" && /^0x[0-9a-f]{40}$/.test(x)))
    return bad("wallets", `must be at most ${MAX_LIST} lowercase addresses`);
  if (b.budget !== undefined) {
    const g = b.budget as Record<string, unknown>;
    if (typeof g !== "object" || g === null || Array.isArray(g)) return bad("budget", "must be an object");
    if (Object.keys(g).some((k) => !["window_seconds", "max_value_wei", "max_signatures"].includes(k)))
      return bad("budget", "holds window_seconds, max_value_wei and max_signatures only");
    if (!isInt(g.window_seconds, 1, MAX_BLOCK_BUDGET_WINDOW_SECONDS))
      return bad("budget", `window_seconds must be from 1 to ${MAX_BLOCK_BUDGET_WINDOW_SECONDS}`);
    if (g.max_value_wei !== undefined && !(typeof g.max_value_wei === "string" && DECIMAL.test(g.max_value_wei)))
      return bad("budget", "max_value_wei must be a decimal integer string");
    if (g.max_signatures !== undefined && !isInt(g.max_signatures, 1, Number.MAX_SAFE_INTEGER))
      return bad("budget", "max_signatures must be a whole number from 1");
    if (g.max_value_wei === undefined && g.max_signatures === undefined)
      return bad("budget", "a budget names max_value_wei, max_signatures or both");
  }
  if (b.delegate !== undefined && b.delegate !== false) return bad("delegate", "can only be false");
  return undefined;
}

/** Whether `value` is a token: its shape (its tag is the enclave's to check). */
function isToken(value: unknown): value is DelegationToken {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const t = value as Record<string, unknown>;
  return (
    Object.keys(t).length === 4 &&
    t.v === 1 &&
    typeof t.root === "string" &&
    /^0x[0-9a-f]{64}$/.test(t.root) &&
    typeof t.tag === "string" &&
    /^[0-9a-f]{64}$/.test(t.tag) &&
    Array.isArray(t.blocks) &&
    t.blocks.length >= 1 &&
    t.blocks.length <= MAX_DEPTH &&
    t.blocks.every((b) => blockProblem(b) === undefined)
  );
}

/** A first child of the usage key `root` (its hash), by the enclave that derived `secret` for it. */
export function mint(secret: Uint8Array, root: string, caveats: Caveats): DelegationToken {
  const block = newBlock(caveats);
  return sized({ v: 1, root, blocks: [block], tag: bytesToHex(extend(secret, block)) });
}

/**
 * `count` first children of `root` under the same caveats, each with its own id: what the enclave's
 * `delegate_key` answers, as keys and their ids. The same keys `mint` and `encodeDelegatedKey` make
 * (a test holds it), made from one check of the caveats and one canonical form of their block with
 * only the id changing — 10 000 in well under a second (bench:enclave).
 */
export function mintKeys(
  secret: Uint8Array,
  root: string,
  caveats: Caveats,
  count: number,
): { keys: string[]; ids: string[] } {
  const first = mint(secret, root, caveats);
  const template = first.blocks[0] as DelegationBlock;
  const json = canonicalJson(template);
  const at = json.indexOf(`"id":"${template.id}"`) + 6;
  const [before, after] = [json.slice(0, at), json.slice(at + template.id.length)];
  const keyed = hmac.create(sha256, secret);
  const keys: string[] = new Array(count);
  const ids: string[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const id = bytesToHex(randomBytes(16));
    const block = `${before}${id}${after}`;
    const tag = bytesToHex(keyed.clone().update(utf8ToBytes(block)).digest());
    ids[i] = id;
    keys[i] = keyText(`{"blocks":[${block}],"root":"${root}","tag":"${tag}","v":1}`);
  }
  return { keys, ids };
}

/** `sgd_` + base64url of a token's canonical JSON. */
function keyText(json: string): string {
  // Canonical JSON of a token is printable ASCII unless a field holds other text: btoa takes it as it is.
  const binary = /^[\x20-\x7e]*$/.test(json)
    ? json
    : Array.from(utf8ToBytes(json), (b) => String.fromCharCode(b)).join("");
  return `${DELEGATED_KEY_PREFIX}${btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/** What every block of a chain allows together (absent: not restricted by any block). */
export type Effective = {
  expires_at?: number;
  groups?: string[];
  actions?: string[];
  wallets?: string[];
  /** The uses each block allows, by its id (each block's own counter). */
  uses: Array<{ id: string; max_uses: number }>;
  /** Each block's budget, counted under its id. */
  budgets: Array<{ id: string } & NonNullable<DelegationBlock["budget"]>>;
  /** Whether another block may be added. */
  delegable: boolean;
};

const intersect = (a: string[] | undefined, b: string[] | undefined) =>
  a === undefined ? b : b === undefined ? a : a.filter((x) => b.includes(x));

/** What `blocks` allow together: the intersection of every block's caveats. */
export function effective(blocks: readonly DelegationBlock[]): Effective {
  const out: Effective = { uses: [], budgets: [], delegable: true };
  for (const b of blocks) {
    if (b.expires_at !== undefined) out.expires_at = Math.min(out.expires_at ?? b.expires_at, b.expires_at);
    for (const k of ["groups", "actions", "wallets"] as const) {
      const v = intersect(out[k], b[k]);
      if (v !== undefined) out[k] = v;
    }
    if (b.max_uses !== undefined) out.uses.push({ id: b.id, max_uses: b.max_uses });
    if (b.budget) out.budgets.push({ id: b.id, ...b.budget });
    if (b.delegate === false) out.delegable = false;
  }
  return out;
}

/**
 * `token` with one more block: what anyone holding a delegated key can do, offline. A field left out
 * keeps the chain's; a block wider than
 * the chain in any dimension is refused (it could not widen the key — every block holds — but it would
 * say something untrue); so is a block after one that forbids delegating, and a chain past MAX_DEPTH.
 */
export function attenuate(token: DelegationToken, caveats: Caveats): DelegationToken {
  const now = effective(token.blocks);
  if (!now.delegable) throw new DelegationError("delegate", "this key may not be delegated further");
  if (token.blocks.length >= MAX_DEPTH) throw new DelegationError("depth", `a chain has at most ${MAX_DEPTH} blocks`);
  const block = newBlock(caveats);
  if (now.expires_at !== undefined && block.expires_at !== undefined && block.expires_at > now.expires_at)
    throw new DelegationError("expires_at", `the key expires at ${now.expires_at}: a child cannot outlive it`);
  for (const k of ["groups", "actions", "wallets"] as const) {
    const allowed = now[k];
    const wider = allowed === undefined ? [] : (block[k] ?? []).filter((x) => !allowed.includes(x));
    if (wider.length > 0) throw new DelegationError(k, `${k} ${wider.join(", ")} are not this key's to give`);
  }
  const uses = Math.min(...now.uses.map((u) => u.max_uses));
  if (block.max_uses !== undefined && now.uses.length > 0 && block.max_uses > uses)
    throw new DelegationError("max_uses", `the key allows at most ${uses} uses: a child cannot have more`);
  if (block.budget) {
    for (const b of now.budgets) {
      if (
        b.max_signatures !== undefined &&
        (block.budget.max_signatures ?? Number.POSITIVE_INFINITY) > b.max_signatures
      )
        throw new DelegationError("budget", `the key's budget allows ${b.max_signatures} signatures a window`);
      if (b.max_value_wei !== undefined && BigInt(block.budget.max_value_wei ?? "0") > BigInt(b.max_value_wei))
        throw new DelegationError("budget", `the key's budget allows ${b.max_value_wei} wei a window`);
    }
  }
  return sized({ ...token, blocks: [...token.blocks, block], tag: bytesToHex(extend(hexToBytes(token.tag), block)) });
}

/** `token`, or a DelegationError when its key would be longer than a header can carry. */
function sized(token: DelegationToken): DelegationToken {
  const chars = DELEGATED_KEY_PREFIX.length + Math.ceil((utf8ToBytes(canonicalJson(token)).length * 4) / 3);
  if (chars > MAX_DELEGATED_KEY_CHARS)
    throw new DelegationError(
      "size",
      `the key would be ${chars} characters, over ${MAX_DELEGATED_KEY_CHARS}: name fewer entries`,
    );
  return token;
}

/** Whether `token`'s tag is the chain's from `secret` (compared in constant time). */
export function verify(secret: Uint8Array, token: DelegationToken): boolean {
  const tag = token.blocks.reduce(extend, secret);
  const given = hexToBytes(token.tag);
  if (given.length !== tag.length) return false;
  let diff = 0;
  for (let i = 0; i < tag.length; i++) diff |= (tag[i] as number) ^ (given[i] as number);
  return diff === 0;
}

/**
 * Whether `token` is a chain started, under `secretOf(its root)`, from the usage key it names,
 * and a well-formed one: no block after one that forbids delegating (a holder can compute the tag of
 * one more block offline; the chain refuses it here), no block id twice (uses, budgets and revocations
 * are counted by id: a repeated id could stand in for another block's counters).
 */
export function check(secretOf: (root: string) => Uint8Array, token: DelegationToken): boolean {
  return checkedCounters(secretOf, token) !== undefined;
}

/**
 * `check`, and for a chain that passes, the name each of its blocks' counters (uses, budgets) is kept
 * under: SHA-256 of the chain's tag at that block, its first 16 bytes in hex. A block's id is not
 * enough: anyone who has seen an id (a usage history, a descendant key) could put a block with that id
 * at the end of a chain of their own and spend its counters; the tag at a block can only be had by
 * holding that block's own chain, and its hash gives the store nothing to extend a chain with.
 */
export function checkedCounters(secretOf: (root: string) => Uint8Array, token: DelegationToken): string[] | undefined {
  const sealed = token.blocks.findIndex((b) => b.delegate === false);
  if (sealed !== -1 && sealed < token.blocks.length - 1) return undefined;
  if (new Set(token.blocks.map((b) => b.id)).size !== token.blocks.length) return undefined;
  let tag = secretOf(token.root);
  const counters: string[] = [];
  for (const block of token.blocks) {
    tag = extend(tag, block);
    counters.push(bytesToHex(sha256(tag).slice(0, 16)));
  }
  const given = hexToBytes(token.tag);
  if (given.length !== tag.length) return undefined;
  let diff = 0;
  for (let i = 0; i < tag.length; i++) diff |= (tag[i] as number) ^ (given[i] as number);
  return diff === 0 ? counters : undefined;
}

/** A token as the key its holder keeps: `sgd_` + base64url of its canonical JSON. */
export function encodeDelegatedKey(token: DelegationToken): string {
  return keyText(canonicalJson(token));
}

/** The token of a delegated key, or a DelegationError for one that is not well formed. */
export function decodeDelegatedKey(key: string): DelegationToken {
  if (!key.startsWith(DELEGATED_KEY_PREFIX) || key.length > MAX_DELEGATED_KEY_CHARS)
    throw new DelegationError("key", "not a delegated key");
  let json: unknown;
  try {
    const binary = atob(key.slice(DELEGATED_KEY_PREFIX.length).replace(/-/g, "+").replace(/_/g, "/"));
    json = JSON.parse(
      new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(
        Uint8Array.from(binary, (c) => c.charCodeAt(0)),
      ),
    );
  } catch {
    throw new DelegationError("key", "not a delegated key");
  }
  if (!isToken(json)) throw new DelegationError("key", "not a delegated key");
  return json;
}
