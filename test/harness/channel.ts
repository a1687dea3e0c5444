// The tests' stand-in edge on the attested channel: signs with the test edge identity the test
// enclaves allow, and checks only that an enclave's served quote binds its channel key (the edge's
// own suites verify the whole quote). No vitest import, so the benchmarks use it too.
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex } from "@noble/hashes/utils";
import { parseQuote } from "../../shared/attestation/index.ts";
import {
  channelKeyId,
  edgeIdentityFromSeed,
  toBase64Url,
  type Aead,
  type OperationAnswer,
  type OperationRequest,
  type SealedRequest,
} from "../../shared/channel/channel.ts";
import { ChannelClient, type ChannelVerifier } from "../../shared/channel/client.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";

const bindsKey: ChannelVerifier = async (doc, _base, expected) => {
  if (parseQuote(doc.quote).reportData !== bytesToHex(expected))
    throw new Error("the channel quote does not bind the channel key");
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

/** An operation's answer as an HTTP client of the edge would see it: status, body, and the headers the edge makes of it. */
export type Reply<T = Record<string, unknown>> = { status: number; body: T; headers: Headers };

export function replyOf<T>(answer: OperationAnswer): Reply<T> {
  const headers = new Headers();
  if (answer.replayed) headers.set("idempotent-replayed", "true");
  if (answer.ok) return { status: 200, body: answer.output as T, headers };
  if (answer.retry_after !== undefined) headers.set("retry-after", String(answer.retry_after));
  return { status: answer.status, body: { error: answer.error } as T, headers };
}

/**
 * The operation `op` with `input`, through the channel to the enclave at `base`, as the edge sends
 * it: `x-request-id`, `x-correlation-id` and `idempotency-key` of `headers` become the request's ids
 * and key (a request id is made when none is given, as the edge does).
 */
export async function callOperation<T = Record<string, unknown>>(
  base: string,
  op: string,
  input: unknown,
  headers: Record<string, string> = {},
  client: ChannelClient = testChannel(),
): Promise<Reply<T>> {
  const correlation = headers["x-correlation-id"];
  const key = headers["idempotency-key"];
  const request: OperationRequest = {
    op,
    ids: {
      request_id: headers["x-request-id"] ?? crypto.randomUUID(),
      ...(correlation === undefined ? {} : { correlation_id: correlation }),
    },
    input,
    ...(key === undefined ? {} : { idempotency_key: key }),
  };
  return replyOf<T>(await client.call(base, request));
}

/** The enclave's whole health report (its `health` operation), read through the channel as the edge reads it. */
export async function internalHealthOf<T = Record<string, unknown>>(base: string): Promise<T> {
  const reply = await callOperation<T>(base, "health", {});
  if (reply.status !== 200)
    throw new Error(`the enclave's internal health answered ${reply.status}: ${JSON.stringify(reply.body)}`);
  return reply.body;
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
