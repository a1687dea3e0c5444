// What the edge requires of an enclave before it seals anything to its channel key
// (docs/design/attestation.md, Channel: step 2): the quote verifies (Intel's root; the enclave's own mock
// root only when this edge is configured for development), its report_data binds the channel key,
// the event log replays to the quote's RTMRs, RTMR3's compose hash is one this edge allows, and —
// when SIGIL_CHECK_GOVERNANCE is on (always in production) — the app's governance contract
// (0x<app id>, on the edge's chain) allows it too.
// Any failure is thrown with its reason; the client skips that enclave and logs why.
import { getCollateral } from "@phala/dcap-qvl";
import {
  governanceAllows,
  parseCollateral,
  verifyAttestation,
  type Collateral,
} from "../../shared/attestation/index.ts";
import type { ChannelDocument, ChannelVerifier } from "../../shared/channel/client.ts";
import { SigilError } from "../../shared/errors.ts";
import { chainClient } from "../chain/client.ts";
import type { EdgeConfig } from "../config.ts";

/** This edge will not seal to the enclave: `enclave_unavailable`, not for a client (`expose` false: it says why, about that enclave). */
export class AttestationRefused extends SigilError {
  override readonly name = "AttestationRefused";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("enclave_unavailable", message, { ...options, expose: false });
  }
}

function derFromServed(value: string): Uint8Array {
  const pem = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(value);
  if (pem) {
    const binary = atob((pem[1] as string).replace(/\s+/g, ""));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  }
  const hex = value.replace(/^0x/, "");
  if (!/^([0-9a-fA-F]{2})+$/.test(hex)) throw new AttestationRefused("the simulated root is neither PEM nor hex");
  return Uint8Array.from(hex.match(/../g) as string[], (b) => Number.parseInt(b, 16));
}

/** The collateral (and, for a simulated enclave, its mock root) to check `doc`'s quote with. */
async function collateralFor(
  config: EdgeConfig,
  doc: ChannelDocument,
  base: string,
): Promise<{ collateral: Collateral; rootCaDer?: Uint8Array }> {
  if (doc.simulated) {
    if (!config.channel.allowSimulated)
      throw new AttestationRefused("the enclave runs a simulated TEE, which this edge does not accept");
    const res = await fetch(`${base}/attestation/simulated-collateral`, { signal: AbortSignal.timeout(15_000) });
    if (!res.ok) throw new AttestationRefused(`the simulated enclave's collateral answered ${res.status}`);
    const served = (await res.json()) as { root_ca_der?: string; root_ca_pem?: string; collateral?: unknown };
    const root = served.root_ca_der ?? served.root_ca_pem;
    if (!root) throw new AttestationRefused("the simulated enclave served no root");
    return { collateral: parseCollateral(served.collateral), rootCaDer: derFromServed(root) };
  }
  const quote = Uint8Array.from((doc.quote.replace(/^0x/, "").match(/../g) ?? []) as string[], (b) =>
    Number.parseInt(b, 16),
  );
  return { collateral: parseCollateral(await getCollateral(config.channel.pccsUrl, quote)) };
}

export function enclaveVerifier(config: EdgeConfig): ChannelVerifier {
  return async (doc, base, expectedReportData) => {
    const { collateral, rootCaDer } = await collateralFor(config, doc, base);
    const result = verifyAttestation(
      { quote: doc.quote, event_log: doc.event_log },
      { collateral, now: Math.floor(Date.now() / 1000), expectedReportData, ...(rootCaDer ? { rootCaDer } : {}) },
    );
    if (!result.ok) {
      const failed = result.checks.filter((c) => !c.ok).map((c) => `${c.check}: ${c.detail}`);
      throw new AttestationRefused(`the enclave's channel quote does not verify (${failed.join("; ")})`);
    }
    const composeHash = result.claims?.composeHash.replace(/^0x/, "").toLowerCase();
    const allowed = config.channel.allowedComposeHashes;
    if (allowed.length > 0 && (!composeHash || !allowed.includes(composeHash))) {
      throw new AttestationRefused(
        `the enclave runs compose hash ${composeHash ?? "(none)"}, which this edge does not allow`,
      );
    }
    if (config.channel.checkGovernance) {
      const appId = result.claims?.appId;
      if (!appId || !composeHash)
        throw new AttestationRefused("the enclave's RTMR3 names no app id to ask the governance contract");
      let allowed: boolean;
      try {
        allowed = await governanceAllows(chainClient(config), appId, composeHash);
      } catch (err) {
        throw new AttestationRefused(
          `the governance contract 0x${appId} could not be asked: ${(err as Error).message.split("\n")[0]}`,
        );
      }
      if (!allowed)
        throw new AttestationRefused(`the governance contract 0x${appId} does not allow compose hash ${composeHash}`);
    }
    console.log(
      JSON.stringify({
        level: "info",
        msg: "enclave channel key pinned",
        enclave: base,
        compose_hash: composeHash,
        simulated: result.simulated,
        instance_id: doc.instance_id ?? null,
      }),
    );
  };
}
