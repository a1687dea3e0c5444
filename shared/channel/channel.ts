// The attested edge↔enclave channel (attestation.md, "mutually attested"), the part both sides
// share: sealing and opening. Workers cannot see a server's TLS certificate, so the channel is one
// layer up:
//
// - The enclave's channel key is an HPKE key pair (DHKEM X25519, HKDF-SHA256, AES-128-GCM), made
//   at boot; its quote binds the public key (report_data = SHA-512("sigil-channel-v1:" ‖ key)).
// - The edge seals each request to the pinned key. The plaintext is the request itself — method,
//   path, headers (the caller's API key among them), body — with a timestamp and a random nonce.
//   The edge signs SHA-256(enc ‖ ciphertext) with its Ed25519 identity; the enclave opens only
//   requests signed by an edge key it lists, within ±60 s, and never the same nonce twice.
// - The answer is sealed with a key exported from the same HPKE context, so only the sender of
//   that request can read it, and any change to it in transit fails its authentication.
//
// No Node-only APIs: WebCrypto (X25519 through @hpke/core, Ed25519, AES-GCM) runs in Node and in
// workerd alike.
import { Aes128Gcm, CipherSuite, DhkemX25519HkdfSha256, HkdfSha256 } from "@hpke/core";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils";
import { z } from "zod";

/** A copy on a plain ArrayBuffer, the type WebCrypto's signatures ask for. */
const bytes = (u: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(u);

const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes128Gcm() });
const INFO = utf8ToBytes("sigil-channel-v1");
const RESPONSE_KEY_LABEL = utf8ToBytes("sigil-channel-v1 response");

/** How far a request's timestamp may be from the enclave's clock. */
export const CHANNEL_WINDOW_MS = 60_000;

/** Why the enclave refused a sealed request; `unknown_channel_key` tells the edge to fetch and verify the key again. */
export type ChannelRefusal = "malformed" | "unknown_channel_key" | "edge_not_allowed" | "bad_signature" | "undecryptable" | "stale" | "replayed";

export class ChannelError extends Error {
  override readonly name = "ChannelError";
  readonly reason: ChannelRefusal;
  constructor(reason: ChannelRefusal, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** What travels inside the seal. */
export type ChannelRequest = { method: string; path: string; headers: Record<string, string>; body: string; ts: number; nonce: string };

const b64 = z.string().regex(/^[A-Za-z0-9_-]*$/);
export const sealedRequestSchema = z.strictObject({ v: z.literal(1), key_id: z.string().regex(/^[0-9a-f]{64}$/), enc: b64, ct: b64, edge_key: b64, sig: b64 });
export type SealedRequest = z.infer<typeof sealedRequestSchema>;
export const sealedResponseSchema = z.strictObject({ v: z.literal(1), iv: b64, ct: b64 });
export type SealedResponse = z.infer<typeof sealedResponseSchema>;

const requestSchema = z.strictObject({
  method: z.string().min(1).max(16),
  path: z.string().startsWith("/").max(2048),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  ts: z.number().int(),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
});

export function toBase64Url(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
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
  return new Uint8Array(await crypto.subtle.digest("SHA-512", bytes(concatBytes(utf8ToBytes("sigil-channel-v1:"), publicKey))));
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

async function signedDigest(enc: Uint8Array, ct: Uint8Array): Promise<Uint8Array> {
  return sha256(concatBytes(enc, ct));
}

// --- the edge's side ----------------------------------------------------------------------------

export type SealedCall = { sealed: SealedRequest; openResponse(response: unknown): Promise<string> };

/** Seals `request` to the enclave's pinned key and signs it as the edge. */
export async function sealRequest(args: {
  enclavePublicKey: Uint8Array;
  identity: EdgeIdentity;
  request: { method: string; path: string; headers: Record<string, string>; body: string };
  now?: number;
}): Promise<SealedCall> {
  const recipientPublicKey = await suite.kem.deserializePublicKey(args.enclavePublicKey);
  const sender = await suite.createSenderContext({ recipientPublicKey, info: INFO });
  const keyId = channelKeyId(args.enclavePublicKey);
  const plaintext: ChannelRequest = { ...args.request, ts: args.now ?? Date.now(), nonce: bytesToHex(crypto.getRandomValues(new Uint8Array(16))) };
  const ct = new Uint8Array(await sender.seal(utf8ToBytes(JSON.stringify(plaintext)), utf8ToBytes(keyId)));
  const enc = new Uint8Array(sender.enc);
  const sig = new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, args.identity.privateKey, bytes(await signedDigest(enc, ct))));
  const responseKey = await importResponseKey(new Uint8Array(await sender.export(RESPONSE_KEY_LABEL, 16)), "decrypt");
  return {
    sealed: { v: 1, key_id: keyId, enc: toBase64Url(enc), ct: toBase64Url(ct), edge_key: toBase64Url(args.identity.publicKey), sig: toBase64Url(sig) },
    async openResponse(response) {
      const parsed = sealedResponseSchema.safeParse(response);
      if (!parsed.success) throw new ChannelError("malformed", "the enclave's answer is not a sealed response");
      try {
        const plain = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: bytes(fromBase64Url(parsed.data.iv)), additionalData: bytes(utf8ToBytes(keyId)) },
          responseKey,
          bytes(fromBase64Url(parsed.data.ct)),
        );
        return new TextDecoder().decode(plain);
      } catch {
        throw new ChannelError("undecryptable", "the enclave's answer does not open: it was altered in transit or not sealed for this request");
      }
    },
  };
}

function importResponseKey(raw: Uint8Array, use: "encrypt" | "decrypt"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", bytes(raw), { name: "AES-GCM" }, false, [use]);
}

// --- the enclave's side -------------------------------------------------------------------------

export type OpenedRequest = { request: ChannelRequest; edgeKey: string; sealResponse(body: string): Promise<SealedResponse> };

/**
 * The enclave's end: opens requests sealed to its key by an allowed edge, within the time window,
 * each nonce once. The nonce cache holds a nonce for twice the window, longer than any timestamp
 * it could come back with.
 */
export class ChannelRecipient {
  readonly publicKey: Uint8Array;
  readonly keyId: string;
  readonly #keyPair: CryptoKeyPair;
  readonly #allowed: Map<string, Promise<CryptoKey>>;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #seen = new Map<string, number>();

  constructor(args: { key: ChannelKeyPair; allowedEdgeKeys: Uint8Array[]; windowMs?: number; now?: () => number }) {
    this.publicKey = args.key.publicKey;
    this.keyId = channelKeyId(args.key.publicKey);
    this.#keyPair = args.key.keyPair;
    this.#windowMs = args.windowMs ?? CHANNEL_WINDOW_MS;
    this.#now = args.now ?? Date.now;
    this.#allowed = new Map(
      args.allowedEdgeKeys.map((k) => [toBase64Url(k), crypto.subtle.importKey("raw", bytes(k), { name: "Ed25519" }, false, ["verify"])] as const),
    );
  }

  async open(input: unknown): Promise<OpenedRequest> {
    const parsed = sealedRequestSchema.safeParse(input);
    if (!parsed.success) throw new ChannelError("malformed", "not a sealed request");
    const sealed = parsed.data;
    if (sealed.key_id !== this.keyId) throw new ChannelError("unknown_channel_key", "sealed to a channel key this enclave does not hold; fetch /channel again");
    const edgeKey = this.#allowed.get(sealed.edge_key);
    if (!edgeKey) throw new ChannelError("edge_not_allowed", "the request is signed by an edge key that is not on this enclave's allow-list");
    const enc = fromBase64Url(sealed.enc);
    const ct = fromBase64Url(sealed.ct);
    const signatureOk = await crypto.subtle.verify({ name: "Ed25519" }, await edgeKey, bytes(fromBase64Url(sealed.sig)), bytes(await signedDigest(enc, ct)));
    if (!signatureOk) throw new ChannelError("bad_signature", "the edge's signature does not cover this request");
    let recipient;
    let plain: ArrayBuffer;
    try {
      recipient = await suite.createRecipientContext({ recipientKey: this.#keyPair, enc, info: INFO });
      plain = await recipient.open(ct, utf8ToBytes(this.keyId));
    } catch {
      throw new ChannelError("undecryptable", "the request does not open with this enclave's channel key");
    }
    let request: ChannelRequest;
    try {
      request = requestSchema.parse(JSON.parse(new TextDecoder().decode(plain)));
    } catch {
      throw new ChannelError("malformed", "the sealed request's contents are not a request");
    }
    const now = this.#now();
    if (Math.abs(now - request.ts) > this.#windowMs) throw new ChannelError("stale", `the request's timestamp is more than ${this.#windowMs / 1000} s from the enclave's clock`);
    this.#forgetOld(now);
    if (this.#seen.has(request.nonce)) throw new ChannelError("replayed", "this request was already received");
    this.#seen.set(request.nonce, now + 2 * this.#windowMs);
    const responseKey = await importResponseKey(new Uint8Array(await recipient.export(RESPONSE_KEY_LABEL, 16)), "encrypt");
    const keyId = this.keyId;
    return {
      request,
      edgeKey: sealed.edge_key,
      async sealResponse(body) {
        const iv = crypto.getRandomValues(new Uint8Array(12));
        const ctOut = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: bytes(utf8ToBytes(keyId)) }, responseKey, bytes(utf8ToBytes(body))));
        return { v: 1, iv: toBase64Url(iv), ct: toBase64Url(ctOut) };
      },
    };
  }

  #forgetOld(now: number): void {
    if (this.#seen.size < 1024) return;
    for (const [nonce, until] of this.#seen) if (until < now) this.#seen.delete(nonce);
  }
}
