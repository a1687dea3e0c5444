// Delegated keys (issue 33, part 2; docs/design/delegation.md): the token algebra — what a delegated
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
import { hmac } from "@noble/hashes/hmac";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from "@noble/hashes/utils";
import { z } from "zod";
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
const MAX_LIST = 64;

const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/, "must be 0x + 64 lowercase hex");
const decimal = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, "must be a decimal integer string");

/** One block of caveats: each present field narrows; an absent one leaves the chain's as it is. */
export const delegationBlockSchema = z.strictObject({
  id: z.string().regex(/^[0-9a-f]{32}$/, "must be 16 bytes of lowercase hex"),
  expires_at: z.number().int().positive().optional().describe("unix seconds: refused from then on"),
  max_uses: z.number().int().min(1).max(1_000_000_000).optional().describe("runs this block allows, counted by its id"),
  groups: z.array(decimal).max(MAX_LIST).optional().describe("runs only in these groups (ids)"),
  actions: z.array(z.string().min(1).max(128)).max(MAX_LIST).optional().describe("runs only these actions (CIDv0)"),
  wallets: z
    .array(z.string().regex(/^0x[0-9a-f]{40}$/, "must be a lowercase address"))
    .max(MAX_LIST)
    .optional()
    .describe("uses only these wallets"),
  budget: z
    .strictObject({
      window_seconds: z.number().int().min(1).max(31_536_000),
      max_value_wei: decimal.optional(),
      max_signatures: z.number().int().min(1).optional(),
    })
    .refine((b) => b.max_value_wei !== undefined || b.max_signatures !== undefined, {
      message: "a budget names max_value_wei, max_signatures or both",
    })
    .optional()
    .describe("what the runs through this block may sign in each window, counted by its id"),
  delegate: z.literal(false).optional().describe("false: no block may follow (the key cannot be narrowed further)"),
});
export type DelegationBlock = z.infer<typeof delegationBlockSchema>;

export const delegationTokenSchema = z.strictObject({
  v: z.literal(1),
  root: hex32.describe("the hash of the usage key the chain starts from"),
  blocks: z.array(delegationBlockSchema).min(1).max(MAX_DEPTH),
  tag: z.string().regex(/^[0-9a-f]{64}$/),
});
export type DelegationToken = z.infer<typeof delegationTokenSchema>;

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
  const block = delegationBlockSchema.safeParse({ ...caveats, id: bytesToHex(randomBytes(16)) });
  if (!block.success)
    throw new DelegationError(
      String(block.error.issues[0]?.path[0] ?? "caveats"),
      block.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
    );
  return block.data;
}

/** A first child of the usage key `root` (its hash), by the enclave that derived `secret` for it. */
export function mint(secret: Uint8Array, root: string, caveats: Caveats): DelegationToken {
  const block = newBlock(caveats);
  return sized({ v: 1, root, blocks: [block], tag: bytesToHex(extend(secret, block)) });
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
  const sealed = token.blocks.findIndex((b) => b.delegate === false);
  if (sealed !== -1 && sealed < token.blocks.length - 1) return false;
  if (new Set(token.blocks.map((b) => b.id)).size !== token.blocks.length) return false;
  return verify(secretOf(token.root), token);
}

/** A token as the key its holder keeps: `sgd_` + base64url of its canonical JSON. */
export function encodeDelegatedKey(token: DelegationToken): string {
  const bytes = utf8ToBytes(canonicalJson(token));
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return `${DELEGATED_KEY_PREFIX}${btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
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
  const token = delegationTokenSchema.safeParse(json);
  if (!token.success) throw new DelegationError("key", "not a delegated key");
  return token.data;
}

/** The path under the edge's URL where an enclave counts a delegated key's use (workers/routes/delegations.ts). */
export const DELEGATIONS_PATH = "/internal/v1/delegations";

/**
 * What an enclave asks the edge's Delegations store before a run through a delegated key: whether any
 * block of the chain is revoked and, op "use", to count one use against each block with `max_uses`
 * (all or nothing); op "peek" (a dry run) counts nothing.
 */
export const delegationUseRequestSchema = z.strictObject({
  op: z.enum(["use", "peek"]),
  /** The run's billing ref, as its token names it. */
  ref: z.string().min(1).max(128),
  /** The account's master hash: whose store. */
  account: hex32,
  blocks: z
    .array(
      z.strictObject({
        id: z.string().regex(/^[0-9a-f]{32}$/),
        max_uses: z.number().int().min(1).optional(),
        /** The chain's expiry, when it has one: past it (and a day), the store forgets the block's uses. */
        expires_at: z.number().int().positive().optional(),
      }),
    )
    .min(1)
    .max(MAX_DEPTH),
});
export type DelegationUseRequest = z.infer<typeof delegationUseRequestSchema>;

/** The store's answer: granted, or which block refused and why. */
export type DelegationUseAnswer =
  | { granted: true }
  | { granted: false; id: string; reason: "revoked" | "used_up"; max_uses?: number };
