// The attested edge↔enclave channel (docs/design/attestation.md, Channel), the part both sides
// share: sessions, sealing and opening. Workers cannot see a server's TLS certificate, so the
// channel is one layer up:
//
// - The enclave's channel key is an HPKE key pair (DHKEM X25519, HKDF-SHA256, AES-128-GCM), made
//   at boot; its quote binds the public key (report_data = SHA-512("sigil-channel-v1:" ‖ key)).
// - The edge opens a session to the pinned key: one HPKE context (its `enc` sent once), signed with
//   the edge's Ed25519 identity over SHA-256(key id ‖ enc). From that context both sides export a
//   request key and a response key (AES-128-GCM); the enclave keeps them for the session, so a
//   request costs one AES-GCM operation each way instead of a key agreement, a key schedule and a
//   signature. The first requests of a session carry its `init` until one answer has come back.
// - Each request is sealed under the session's request key. The plaintext is the operation itself —
//   its name in the operation table (shared/operations.ts), the request's ids and its input (the
//   caller's API key among them) — with a timestamp and a random nonce; the enclave opens only requests of a session an allowed edge signed, within ±60 s, and
//   never the same nonce twice. It stores a session only after authenticating its opening, so
//   refused openings cost it nothing and displace no live session. Only the edge that made the session holds its keys, so a request
//   that opens came from it.
// - The answer is sealed under the session's response key, bound to the request's nonce, so it
//   opens only for that request, and any change to it in transit fails its authentication.
//
// No Node-only APIs: WebCrypto (X25519 through @hpke/core, Ed25519, AES-GCM) runs in Node and in
// workerd alike.
import { Aes128Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from "@hpke/core";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { z } from "zod";
import { SigilError } from "../errors.ts";
import { TokenBuckets, type BucketRate } from "../tokenBucket.ts";

/** A copy on a plain ArrayBuffer, the type WebCrypto's signatures ask for. */
const bytes = (u: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(u);

const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes128Gcm() });
const INFO = utf8ToBytes("sigil-channel-v1");
const REQUEST_KEY_LABEL = utf8ToBytes("sigil-channel-v1 request");
const RESPONSE_KEY_LABEL = utf8ToBytes("sigil-channel-v1 response");

/** How far a request's timestamp may be from the enclave's clock. */
export const CHANNEL_WINDOW_MS = 60_000;
/** How long the enclave keeps a session; the edge starts a new one well before (its pins last 10 minutes). */
export const SESSION_LIFETIME_MS = 60 * 60_000;
/** Requests per session before the edge starts a new one (random 96-bit IVs stay far from collisions). */
export const SESSION_MAX_MESSAGES = 1 << 24;

/**
 * Why the enclave refused a sealed request. `unknown_channel_key` tells the edge to fetch and
 * verify the key again; `unknown_session` to start a new session (the enclave dropped the old one).
 */
export type ChannelRefusal =
  | "malformed"
  | "unknown_channel_key"
  | "unknown_session"
  | "edge_not_allowed"
  | "bad_signature"
  | "undecryptable"
  | "stale"
  | "replayed"
  | "too_many_openings";

/**
 * A sealed request refused for `reason`. Not for a client (`expose` false): to the edge's caller it
 * means the enclave could not take the request, `enclave_unavailable`; `retryAfterSeconds` is set
 * for `too_many_openings` (when the source may open again).
 */
export class ChannelError extends SigilError {
  override readonly name = "ChannelError";
  readonly reason: ChannelRefusal;
  constructor(reason: ChannelRefusal, message: string, options: { retryAfterSeconds?: number } = {}) {
    super("enclave_unavailable", message, { ...options, expose: false });
    this.reason = reason;
  }
}

/** The ids a request carries from the edge to the enclave's log lines and error bodies. */
export type RequestIds = { request_id: string; correlation_id?: string };

/**
 * What the edge asks: an operation of the table (shared/operations.ts) by its name, with its input
 * as a JSON value, the request's ids, and the client's Idempotency-Key when it sent one.
 */
export type OperationRequest = { op: string; ids: RequestIds; input: unknown; idempotency_key?: string };

/** What travels inside the seal: the operation, a timestamp and a nonce. */
export type ChannelRequest = OperationRequest & { ts: number; nonce: string };

/**
 * The enclave's answer, inside the seal: the operation's output, or its error as the client gets it
 * (status, the error body's `error`, and Retry-After in seconds). `replayed` marks an answer given
 * from the enclave's memory of an Idempotency-Key.
 */
export type OperationAnswer =
  | { ok: true; output: unknown; replayed?: true }
  | {
      ok: false;
      status: number;
      error: { code: string; message: string; request_id: string; details?: unknown };
      retry_after?: number;
      replayed?: true;
    };

export const operationAnswerSchema = z.union([
  z.strictObject({ ok: z.literal(true), output: z.unknown(), replayed: z.literal(true).optional() }),
  z.strictObject({
    ok: z.literal(false),
    status: z.number().int().min(400).max(599),
    error: z.object({ code: z.string(), message: z.string(), request_id: z.string(), details: z.unknown().optional() }),
    retry_after: z.number().int().nonnegative().optional(),
    replayed: z.literal(true).optional(),
  }),
]);

const b64 = z.string().regex(/^[A-Za-z0-9_-]*$/);
const sessionInitSchema = z.strictObject({ enc: b64, edge_key: b64, sig: b64 });
export const sealedRequestSchema = z.strictObject({
  v: z.literal(2),
  key_id: z.string().regex(/^[0-9a-f]{64}$/),
  sid: z.string().regex(/^[0-9a-f]{32}$/),
  init: sessionInitSchema.optional(),
  iv: b64,
  ct: b64,
});
export type SealedRequest = z.infer<typeof sealedRequestSchema>;
export const sealedResponseSchema = z.strictObject({ v: z.literal(2), iv: b64, ct: b64 });
export type SealedResponse = z.infer<typeof sealedResponseSchema>;

const requestSchema = z.strictObject({
  op: z.string().regex(/^[a-z_]{1,64}$/),
  ids: z.strictObject({ request_id: z.string().max(200), correlation_id: z.string().max(200).optional() }),
  input: z.unknown(),
  idempotency_key: z.string().max(1024).optional(),
  ts: z.number().int(),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
});

const BASE64URL_CODES = Uint8Array.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", (c) =>
  c.charCodeAt(0),
);
const latin1 = new TextDecoder("latin1");

/**
 * Base64url without padding, by table: every request and answer of the channel is encoded here, and
 * btoa plus three regular-expression replacements cost about ten times as much.
 */
export function toBase64Url(bytes: Uint8Array): string {
  const n = bytes.length;
  const out = new Uint8Array(Math.ceil((n * 4) / 3));
  let o = 0;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = ((bytes[i] as number) << 16) | ((bytes[i + 1] as number) << 8) | (bytes[i + 2] as number);
    out[o++] = BASE64URL_CODES[v >> 18] as number;
    out[o++] = BASE64URL_CODES[(v >> 12) & 63] as number;
    out[o++] = BASE64URL_CODES[(v >> 6) & 63] as number;
    out[o++] = BASE64URL_CODES[v & 63] as number;
  }
  if (i < n) {
    const v = ((bytes[i] as number) << 16) | (i + 1 < n ? (bytes[i + 1] as number) << 8 : 0);
    out[o++] = BASE64URL_CODES[v >> 18] as number;
    out[o++] = BASE64URL_CODES[(v >> 12) & 63] as number;
    if (i + 1 < n) out[o++] = BASE64URL_CODES[(v >> 6) & 63] as number;
  }
  return latin1.decode(out.subarray(0, o));
}

export function fromBase64Url(text: string): Uint8Array {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(base64.padEnd(Math.ceil(base64.length / 4) * 4, "="));
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** The id of a channel key: hex SHA-256 of its public key (sent with each request; a stale one is refused). */
export function channelKeyId(publicKey: Uint8Array): string {
  return bytesToHex(sha256(publicKey));
}

/** What the enclave's quote binds: SHA-512("sigil-channel-v1:" ‖ public key), its 64-byte report_data. */
export async function channelReportData(publicKey: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(
    await crypto.subtle.digest("SHA-512", bytes(concatBytes(utf8ToBytes("sigil-channel-v1:"), publicKey))),
  );
}

export type ChannelKeyPair = { publicKey: Uint8Array; keyPair: CryptoKeyPair };

/** A fresh channel key pair (the enclave makes one at boot and never stores it). */
export async function generateChannelKeyPair(): Promise<ChannelKeyPair> {
  const keyPair = await suite.kem.generateKeyPair();
  return { keyPair, publicKey: new Uint8Array(await suite.kem.serializePublicKey(keyPair.publicKey)) };
}

// --- Ed25519 identities (the edge's) ------------------------------------------------------------

export type EdgeIdentity = { privateKey: CryptoKey; publicKey: Uint8Array };

/** The edge's identity from its 32-byte Ed25519 seed (a Worker secret, hex). */
export async function edgeIdentityFromSeed(seedHex: string): Promise<EdgeIdentity> {
  const seed = hexToBytes(seedHex.replace(/^0x/, ""));
  if (seed.length !== 32) throw new Error("the edge identity key must be 32 bytes of hex");
  // PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410): a fixed 16-byte prefix.
  const pkcs8 = concatBytes(hexToBytes("302e020100300506032b657004220420"), seed);
  const privateKey = await crypto.subtle.importKey("pkcs8", bytes(pkcs8), { name: "Ed25519" }, true, ["sign"]);
  const jwk = (await crypto.subtle.exportKey("jwk", privateKey)) as JsonWebKey;
  return { privateKey, publicKey: fromBase64Url(jwk.x as string) };
}

/** A new random identity seed (hex) for `npm start` and tests. */
export function newEdgeIdentitySeed(): string {
  return bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
}

// --- what both ends compute -----------------------------------------------------------------------

/** A session's id: the first 16 bytes of SHA-256(enc), hex, so an `init` cannot be filed under another id. */
function sessionId(enc: Uint8Array): string {
  return bytesToHex(sha256(enc).subarray(0, 16));
}

/** What the edge signs to open a session: SHA-256(key id ‖ enc). */
function sessionDigest(keyId: string, enc: Uint8Array): Uint8Array<ArrayBuffer> {
  return bytes(sha256(concatBytes(utf8ToBytes(keyId), enc)));
}

const requestAad = (keyId: string, sid: string) => utf8ToBytes(`${keyId}:${sid}`);
const responseAad = (nonce: string) => utf8ToBytes(`response:${nonce}`);

/**
 * AES-128-GCM as the channel's sessions use it: ciphertext ‖ 16-byte tag, a 12-byte IV, additional
 * data. WebCrypto by default (Node and workerd alike); a side whose platform has a faster native
 * cipher may pass its own (the enclave passes Node's: WebCrypto's asynchronous jobs cost it a tenth
 * of a millisecond each). Keys are what `key` made of the 16 raw bytes; `open` rejects a ciphertext
 * that does not authenticate.
 */
export type Aead = {
  key(raw: Uint8Array): Promise<unknown>;
  seal(key: unknown, iv: Uint8Array, plaintext: Uint8Array, aad: Uint8Array): Promise<Uint8Array>;
  open(key: unknown, iv: Uint8Array, ciphertext: Uint8Array, aad: Uint8Array): Promise<Uint8Array>;
};

/** AES-256-GCM in Web Crypto, one way or the other (a failed tag check rejects). */
async function webCryptoGcm(
  way: "encrypt" | "decrypt",
  key: unknown,
  iv: Uint8Array,
  data: Uint8Array,
  aad: Uint8Array,
): Promise<Uint8Array> {
  const params = { name: "AES-GCM", iv: bytes(iv), additionalData: bytes(aad) };
  return new Uint8Array(await crypto.subtle[way](params, key as CryptoKey, bytes(data)));
}

export const webCryptoAead: Aead = {
  key: (raw) => crypto.subtle.importKey("raw", bytes(raw), { name: "AES-GCM" }, false, ["encrypt", "decrypt"]),
  seal: (key, iv, plaintext, aad) => webCryptoGcm("encrypt", key, iv, plaintext, aad),
  open: (key, iv, ciphertext, aad) => webCryptoGcm("decrypt", key, iv, ciphertext, aad),
};

type SessionKeys = { aead: Aead; request: unknown; response: unknown };

async function sessionKeys(
  context: { export(label: ArrayBuffer | Uint8Array, length: number): Promise<ArrayBuffer> },
  aead: Aead,
): Promise<SessionKeys> {
  const [request, response] = await Promise.all(
    [REQUEST_KEY_LABEL, RESPONSE_KEY_LABEL].map(async (label) => {
      const raw = new Uint8Array(await context.export(label, 16));
      try {
        return await aead.key(raw);
      } finally {
        raw.fill(0);
      }
    }),
  );
  return { aead, request, response };
}

// --- the edge's side ----------------------------------------------------------------------------

export type SealedCall = { sealed: SealedRequest; openResponse(response: unknown): Promise<string> };

/**
 * The edge's session with one enclave key. Its requests carry the signed `init` until one answer
 * has opened (the enclave holds the session from then on), and it is spent after
 * SESSION_MAX_MESSAGES requests or when its time is up; the caller then opens a new one.
 */
export class ChannelSession {
  readonly keyId: string;
  readonly sid: string;
  readonly #init: z.infer<typeof sessionInitSchema>;
  readonly #keys: SessionKeys;
  readonly #expiresAt: number;
  #confirmed = false;
  #messages = 0;

  private constructor(args: {
    keyId: string;
    sid: string;
    init: z.infer<typeof sessionInitSchema>;
    keys: SessionKeys;
    expiresAt: number;
  }) {
    this.keyId = args.keyId;
    this.sid = args.sid;
    this.#init = args.init;
    this.#keys = args.keys;
    this.#expiresAt = args.expiresAt;
  }

  /** A new session to the enclave key `enclavePublicKey`, signed as `identity`. */
  static async open(args: {
    enclavePublicKey: Uint8Array;
    identity: EdgeIdentity;
    lifetimeMs?: number;
    now?: number;
    aead?: Aead;
  }): Promise<ChannelSession> {
    const recipientPublicKey = await suite.kem.deserializePublicKey(args.enclavePublicKey);
    const sender = await suite.createSenderContext({ recipientPublicKey, info: INFO });
    const keyId = channelKeyId(args.enclavePublicKey);
    const enc = new Uint8Array(sender.enc);
    const sig = new Uint8Array(
      await crypto.subtle.sign({ name: "Ed25519" }, args.identity.privateKey, sessionDigest(keyId, enc)),
    );
    return new ChannelSession({
      keyId,
      sid: sessionId(enc),
      init: { enc: toBase64Url(enc), edge_key: toBase64Url(args.identity.publicKey), sig: toBase64Url(sig) },
      keys: await sessionKeys(sender, args.aead ?? webCryptoAead),
      // Well inside the enclave's own limit, so the enclave never drops a session still in use.
      expiresAt:
        (args.now ?? Date.now()) + Math.min(args.lifetimeMs ?? SESSION_LIFETIME_MS / 2, SESSION_LIFETIME_MS / 2),
    });
  }

  /** Whether this session may seal another request (else open a new one). */
  usable(now = Date.now()): boolean {
    return this.#messages < SESSION_MAX_MESSAGES && now < this.#expiresAt;
  }

  /** Seals `request` in this session; `openResponse` opens the enclave's answer to it, and only that. */
  async seal(request: OperationRequest, now?: number): Promise<SealedCall> {
    this.#messages++;
    const plaintext: ChannelRequest = {
      ...request,
      ts: now ?? Date.now(),
      nonce: bytesToHex(crypto.getRandomValues(new Uint8Array(16))),
    };
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const keys = this.#keys;
    const ct = await keys.aead.seal(
      keys.request,
      iv,
      utf8ToBytes(JSON.stringify(plaintext)),
      requestAad(this.keyId, this.sid),
    );
    const sealed: SealedRequest = {
      v: 2,
      key_id: this.keyId,
      sid: this.sid,
      ...(this.#confirmed ? {} : { init: this.#init }),
      iv: toBase64Url(iv),
      ct: toBase64Url(ct),
    };
    const session = this;
    return {
      sealed,
      async openResponse(response) {
        const parsed = sealedResponseSchema.safeParse(response);
        if (!parsed.success) throw new ChannelError("malformed", "the enclave's answer is not a sealed response");
        let plain: Uint8Array;
        try {
          plain = await keys.aead.open(
            keys.response,
            fromBase64Url(parsed.data.iv),
            fromBase64Url(parsed.data.ct),
            responseAad(plaintext.nonce),
          );
        } catch {
          throw new ChannelError(
            "undecryptable",
            "the enclave's answer does not open: it was altered in transit or not sealed for this request",
          );
        }
        // The enclave holds the session now: later requests need not carry its init.
        session.#confirmed = true;
        return new TextDecoder().decode(plain);
      },
    };
  }
}

/** One request in a session of its own (a session's first request carries everything the enclave needs). */
export async function sealRequest(args: {
  enclavePublicKey: Uint8Array;
  identity: EdgeIdentity;
  request: OperationRequest;
  now?: number;
}): Promise<SealedCall> {
  const session = await ChannelSession.open(args);
  return session.seal(args.request, args.now);
}

// --- the enclave's side -------------------------------------------------------------------------

/** An opened request: the operation, who sent it, its size in bytes (for the operation's body limit), and how to seal its answer (JSON text). */
export type OpenedRequest = {
  request: ChannelRequest;
  edgeKey: string;
  sid: string;
  bytes: number;
  sealResponse(body: string): Promise<SealedResponse>;
};

type HeldSession = { edgeKey: string; keys: SessionKeys; expiresAt: number };

/** Refused session openings a source may send before its refusals become 429: a burst, then a steady rate (per second). */
export const DEFAULT_OPENINGS: BucketRate = { capacity: 64, perSecond: 8 };

/**
 * The enclave's end: opens requests sealed to its key in sessions an allowed edge signed, within
 * the time window, each nonce once.
 *
 * A session is stored only once its opening has been authenticated (an allowed edge key, its
 * signature over this enclave's key and the session's `enc`, an HPKE context that opens): a refused
 * opening costs no storage and displaces nothing, so no flood of junk can push out an edge's live
 * session. An opening with a key that is not on the allow-list is refused before any signature or
 * HPKE work; one that fails later still costs its checks (an Ed25519 verify, the HPKE setup): the
 * source cannot be judged before them, since behind dstack-ingress every edge shares one address.
 * Refused openings are counted per source (`openings`, a token bucket per peer address): past that
 * budget a refusal is 429 too_many_openings with Retry-After instead of 401, a signal to back off;
 * it saves no CPU, and an authenticated opening is never refused. Sessions are kept for SESSION_LIFETIME_MS, at most `maxSessions` of them (the
 * least recently used is dropped first; its edge simply opens a new one). The nonce cache holds a
 * nonce until its request's timestamp has left the window: a replay after that is refused as stale.
 */
export class ChannelRecipient {
  readonly publicKey: Uint8Array;
  readonly keyId: string;
  readonly #keyPair: CryptoKeyPair;
  readonly #allowed: Map<string, Promise<CryptoKey>>;
  readonly #windowMs: number;
  readonly #maxSessions: number;
  readonly #now: () => number;
  /** Nonces seen, in the order they came, with when each may be forgotten. */
  readonly #seen = new Map<string, number>();
  /** Authenticated sessions, least recently used first. */
  readonly #sessions = new Map<string, HeldSession>();
  /** Openings being authenticated, by their whole init: concurrent first requests of one session share one. */
  readonly #opening = new Map<string, Promise<HeldSession>>();
  readonly #openings: TokenBuckets;

  readonly #aead: Aead;

  constructor(args: {
    key: ChannelKeyPair;
    allowedEdgeKeys: Uint8Array[];
    windowMs?: number;
    maxSessions?: number;
    openings?: BucketRate;
    now?: () => number;
    aead?: Aead;
  }) {
    this.#aead = args.aead ?? webCryptoAead;
    this.publicKey = args.key.publicKey;
    this.keyId = channelKeyId(args.key.publicKey);
    this.#keyPair = args.key.keyPair;
    this.#windowMs = args.windowMs ?? CHANNEL_WINDOW_MS;
    this.#maxSessions = args.maxSessions ?? 4096;
    this.#now = args.now ?? Date.now;
    this.#openings = new TokenBuckets(args.openings ?? DEFAULT_OPENINGS, { now: this.#now });
    this.#allowed = new Map(
      args.allowedEdgeKeys.map(
        (k) =>
          [toBase64Url(k), crypto.subtle.importKey("raw", bytes(k), { name: "Ed25519" }, false, ["verify"])] as const,
      ),
    );
  }

  /** Sessions held now. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /**
   * Forgets every session held (not the nonces seen): each edge's next request is refused
   * unknown_session and the edge opens a new one, as after the sessions were evicted. How many
   * were dropped. For the soak's fault of a lost session (enclave/channel/channel.ts).
   */
  dropSessions(): number {
    const n = this.#sessions.size;
    this.#sessions.clear();
    return n;
  }

  /** Opens a sealed request; `source` names where it came from (the peer address), whose openings are bounded. */
  async open(input: unknown, from: { source?: string } = {}): Promise<OpenedRequest> {
    const parsed = sealedRequestSchema.safeParse(input);
    if (!parsed.success) throw new ChannelError("malformed", "not a sealed request");
    const sealed = parsed.data;
    if (sealed.key_id !== this.keyId)
      throw new ChannelError(
        "unknown_channel_key",
        "sealed to a channel key this enclave does not hold; fetch /channel again",
      );
    const session = await this.#session(sealed, from.source ?? "unknown");
    let plain: Uint8Array;
    try {
      plain = await session.keys.aead.open(
        session.keys.request,
        fromBase64Url(sealed.iv),
        fromBase64Url(sealed.ct),
        requestAad(this.keyId, sealed.sid),
      );
    } catch {
      throw new ChannelError("undecryptable", "the request does not open with this session's key");
    }
    let request: ChannelRequest;
    try {
      request = requestSchema.parse(JSON.parse(new TextDecoder().decode(plain)));
    } catch {
      throw new ChannelError("malformed", "the sealed request's contents are not a request");
    }
    const now = this.#now();
    if (Math.abs(now - request.ts) > this.#windowMs)
      throw new ChannelError(
        "stale",
        `the request's timestamp is more than ${this.#windowMs / 1000} s from the enclave's clock`,
      );
    this.#forgetOld(now);
    if (this.#seen.has(request.nonce)) throw new ChannelError("replayed", "this request was already received");
    // Kept while a request with this nonce could still pass the time check: until its timestamp
    // leaves the window (a second more for clock steps). Not `now + 2 × window`: at thousands of
    // requests a second, that would keep twice as many nonces for nothing.
    this.#seen.set(request.nonce, request.ts + this.#windowMs + 1_000);
    const keys = session.keys;
    return {
      request,
      edgeKey: session.edgeKey,
      sid: sealed.sid,
      bytes: plain.length,
      async sealResponse(body) {
        const iv = crypto.getRandomValues(new Uint8Array(12));
        const ct = await keys.aead.seal(keys.response, iv, utf8ToBytes(body), responseAad(request.nonce));
        return { v: 2, iv: toBase64Url(iv), ct: toBase64Url(ct) };
      },
    };
  }

  /** The session a request names: held, or opened from its `init` once that is authenticated. */
  async #session(sealed: SealedRequest, source: string): Promise<HeldSession> {
    const now = this.#now();
    const held = this.#sessions.get(sealed.sid);
    if (held) {
      if (held.expiresAt <= now) {
        this.#sessions.delete(sealed.sid);
        throw new ChannelError("unknown_session", "this session has expired; open a new one");
      }
      // Used now: the last to be dropped when room is needed.
      this.#sessions.delete(sealed.sid);
      this.#sessions.set(sealed.sid, held);
      return held;
    }
    const init = sealed.init;
    if (!init) throw new ChannelError("unknown_session", "this enclave holds no such session; open a new one");
    // The cheap refusals first, before any cryptography is spent on the opening.
    const edgeKey = this.#allowed.get(init.edge_key);
    if (!edgeKey)
      throw new ChannelError(
        "edge_not_allowed",
        "the session is signed by an edge key that is not on this enclave's allow-list",
      );
    const enc = fromBase64Url(init.enc);
    if (sessionId(enc) !== sealed.sid)
      throw new ChannelError("malformed", "the session id is not the one its init names");
    // Keyed by the whole init, so a forged signature over a live opening's enc cannot fail it.
    const openingKey = `${sealed.sid}:${init.edge_key}:${init.sig}`;
    let opening = this.#opening.get(openingKey);
    if (!opening) {
      // Authenticated before anything is stored (and its signature before any HPKE work). Only a
      // refused opening counts against its source: behind dstack-ingress every peer is the ingress,
      // and an edge's own openings must never be refused for what others sent from there.
      const authenticating = this.#authenticate(init, enc, edgeKey, now).then(
        (session) => {
          this.#store(sealed.sid, session);
          return session;
        },
        (err: unknown) => {
          const waitMs = this.#openings.take(source);
          if (waitMs > 0)
            throw new ChannelError(
              "too_many_openings",
              "too many refused session openings from this source; retry later",
              { retryAfterSeconds: Math.ceil(waitMs / 1000) },
            );
          throw err;
        },
      );
      const done = () => {
        if (this.#opening.get(openingKey) === authenticating) this.#opening.delete(openingKey);
      };
      authenticating.then(done, done);
      this.#opening.set(openingKey, authenticating);
      opening = authenticating;
    }
    return opening;
  }

  /** Keeps an authenticated session, dropping the least recently used ones beyond `maxSessions`. */
  #store(sid: string, session: HeldSession): void {
    this.#sessions.delete(sid);
    this.#sessions.set(sid, session);
    while (this.#sessions.size > this.#maxSessions) this.#sessions.delete(this.#sessions.keys().next().value as string);
  }

  async #authenticate(
    init: z.infer<typeof sessionInitSchema>,
    enc: Uint8Array,
    edgeKey: Promise<CryptoKey>,
    now: number,
  ): Promise<HeldSession> {
    const signatureOk = await crypto.subtle.verify(
      { name: "Ed25519" },
      await edgeKey,
      bytes(fromBase64Url(init.sig)),
      sessionDigest(this.keyId, enc),
    );
    if (!signatureOk) throw new ChannelError("bad_signature", "the edge's signature does not cover this session");
    let keys: SessionKeys;
    try {
      const recipient = await suite.createRecipientContext({ recipientKey: this.#keyPair, enc, info: INFO });
      keys = await sessionKeys(recipient, this.#aead);
    } catch {
      throw new ChannelError("undecryptable", "the session does not open with this enclave's channel key");
    }
    return { edgeKey: init.edge_key, keys, expiresAt: now + SESSION_LIFETIME_MS };
  }

  /**
   * Drops the nonces whose time has passed, oldest stored first, stopping at the first that has not:
   * requests come in about their timestamps' order, so little lingers past its time, and nothing is
   * dropped before it (only an entry whose time has passed is ever deleted).
   */
  #forgetOld(now: number): void {
    for (const [nonce, until] of this.#seen) {
      if (until >= now) break;
      this.#seen.delete(nonce);
    }
  }
}
