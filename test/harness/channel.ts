// The tests' stand-in edge on the attested channel: signs with the test edge identity the test
// enclaves allow, and checks only that an enclave's served quote binds its channel key (the edge's
// own suites verify the whole quote). No vitest import, so the benchmarks use it too.
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex } from "@noble/hashes/utils";
import { parseQuote } from "../../shared/attestation/index.ts";
import { channelKeyId, edgeIdentityFromSeed, toBase64Url, type Aead, type SealedRequest } from "../../shared/channel/channel.ts";
import { ChannelClient, type ChannelVerifier } from "../../shared/channel/client.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";

const bindsKey: ChannelVerifier = async (doc, _base, expected) => {
  if (parseQuote(doc.quote).reportData !== bytesToHex(expected)) throw new Error("the channel quote does not bind the channel key");
};

let client: ChannelClient | undefined;

/** A stand-in edge of its own (the benchmarks give it a lighter `fetch` and Node's cipher). */
export function newTestChannel(options: { fetch?: typeof fetch; aead?: Aead } = {}): ChannelClient {
  return new ChannelClient({ identity: edgeIdentityFromSeed(TEST_EDGE_IDENTITY_SEED), verify: bindsKey, ...options });
}

/** One stand-in edge per process. */
export function testChannel(): ChannelClient {
  client ??= newTestChannel();
  return client;
}

/** The enclave's whole health report (its internal `GET /internal/v1/health`), read through the channel as the edge reads it. */
export async function internalHealthOf<T = Record<string, unknown>>(base: string): Promise<T> {
  const answer = await testChannel().call(base, { method: "GET", path: "/internal/v1/health", headers: {}, body: "" });
  if (answer.status !== 200) throw new Error(`the enclave's internal health answered ${answer.status}: ${answer.body}`);
  return JSON.parse(answer.body) as T;
}

/**
 * A junk session opening to the enclave key `enclavePublicKey`: a random `enc` and the session id it
 * implies, claiming the edge key `edgeKey` (base64url) with a signature of random bytes. With a key
 * the enclave does not allow it is refused at once; with an allowed one it costs a signature check.
 */
export function junkOpening(enclavePublicKey: Uint8Array, edgeKey: string): SealedRequest {
  const enc = crypto.getRandomValues(new Uint8Array(32));
  const filler = toBase64Url(crypto.getRandomValues(new Uint8Array(64)));
  return {
    v: 2,
    key_id: channelKeyId(enclavePublicKey),
    sid: bytesToHex(sha256(enc).subarray(0, 16)),
    init: { enc: toBase64Url(enc), edge_key: edgeKey, sig: filler },
    iv: filler.slice(0, 16),
    ct: filler,
  };
}
