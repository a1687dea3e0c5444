// The tests' stand-in edge on the attested channel: signs with the test edge identity the test
// enclaves allow, and checks only that an enclave's served quote binds its channel key (the edge's
// own suites verify the whole quote). No vitest import, so the benchmarks use it too.
import { bytesToHex } from "@noble/hashes/utils";
import { parseQuote } from "../../shared/attestation/index.ts";
import { edgeIdentityFromSeed, type Aead } from "../../shared/channel/channel.ts";
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
