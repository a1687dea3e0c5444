// The simulated TEE (docs/design/attestation.md, Sources): real-format TDX v4 quotes, signed for real, under a
// mock DCAP PKI made at start — they verify with dcap-qvl against the mock root (served at
// /attestation/simulated-collateral) and never against Intel's. Only for SIGIL_ATTESTATION=simulated,
// which config.ts refuses in production. Every value that could pass for a measurement says
// SIMULATED: MRTD, RTMR0–2's events, MRSEAM, the QE's identity, the PKI's names, the FMSPC.
import { hkdf } from "@noble/hashes/hkdf";
import { sha256 } from "@noble/hashes/sha2";
import { bytesToHex, concatBytes, utf8ToBytes } from "@noble/hashes/utils";
import { assertReportData, type AttestationSource, type Info, type QuoteAnswer } from "../source.ts";
import { simulatedBoot, type SimulatedBoot } from "./boot.ts";
import { createMockDcapPki, label, type DcapCollateral, type MockDcapPki } from "./pki.ts";
import { createQuoteSigner, signTdxQuote, type QuoteSigner } from "./quote.ts";

export type SimulatedSourceOptions = {
  /** The app-compose text, exactly as dstack would measure it. */
  appCompose: string;
  /** 20 bytes; random when absent (a new instance per start, like a new CVM). */
  instanceId?: Uint8Array;
  /** What getKey derives from; random when absent. */
  keySeed?: Uint8Array;
  now?: () => number;
};

const COLLATERAL_REISSUE_MS = 86_400_000;

export class SimulatedSource implements AttestationSource {
  readonly kind = "simulated" as const;
  readonly rootCaDer: Uint8Array;
  readonly rootCaPem: string;
  readonly boot: SimulatedBoot;
  readonly appCompose: string;
  readonly vmConfig: string;
  private readonly pki: MockDcapPki;
  private readonly signer: QuoteSigner;
  private readonly keySeed: Uint8Array;
  private readonly now: () => number;
  private issued: { atMs: number; collateral: Promise<DcapCollateral> } | undefined;

  private constructor(parts: {
    pki: MockDcapPki;
    signer: QuoteSigner;
    boot: SimulatedBoot;
    appCompose: string;
    keySeed: Uint8Array;
    now: () => number;
  }) {
    this.pki = parts.pki;
    this.signer = parts.signer;
    this.boot = parts.boot;
    this.appCompose = parts.appCompose;
    this.keySeed = parts.keySeed;
    this.now = parts.now;
    this.rootCaDer = parts.pki.rootCaDer;
    this.rootCaPem = parts.pki.rootCaPem;
    this.vmConfig = JSON.stringify({
      spec_version: 1,
      os_image_hash: OS_IMAGE_HASH,
      cpu_count: 2,
      memory_size: 2 << 30,
      image: "SIMULATED-NOT-A-DSTACK-IMAGE",
      simulated: true,
    });
  }

  static async create(options: SimulatedSourceOptions): Promise<SimulatedSource> {
    const now = options.now ?? Date.now;
    const keySeed = options.keySeed ?? crypto.getRandomValues(new Uint8Array(32));
    const pki = await createMockDcapPki(now());
    const signer = await createQuoteSigner(pki);
    const boot = simulatedBoot(options.appCompose, {
      instanceId: options.instanceId ?? crypto.getRandomValues(new Uint8Array(20)),
      keyProvider: {
        name: "simulated",
        id: bytesToHex(sha256(concatBytes(utf8ToBytes("sigil-simulated-key-provider:"), keySeed))),
      },
    });
    return new SimulatedSource({ pki, signer, boot, appCompose: options.appCompose, keySeed, now });
  }

  async getQuote(reportData: Uint8Array): Promise<QuoteAnswer> {
    assertReportData(reportData);
    const quote = await signTdxQuote(this.signer, { mrTd: this.boot.mrTd, rtmrs: this.boot.rtmrs, reportData });
    return { quote: bytesToHex(quote), event_log: JSON.stringify(this.boot.eventLog), vm_config: this.vmConfig };
  }

  async info(): Promise<Info> {
    const b = this.boot;
    return {
      app_id: b.appId,
      instance_id: b.instanceId,
      app_name: appName(this.appCompose),
      device_id: DEVICE_ID,
      os_image_hash: OS_IMAGE_HASH,
      key_provider_info: JSON.stringify(b.keyProvider),
      compose_hash: b.composeHash,
      vm_config: this.vmConfig,
      tcb_info: {
        mrtd: bytesToHex(b.mrTd),
        rtmr0: bytesToHex(b.rtmrs[0]),
        rtmr1: bytesToHex(b.rtmrs[1]),
        rtmr2: bytesToHex(b.rtmrs[2]),
        rtmr3: bytesToHex(b.rtmrs[3]),
        os_image_hash: OS_IMAGE_HASH,
        compose_hash: b.composeHash,
        device_id: DEVICE_ID,
        app_compose: this.appCompose,
        event_log: b.eventLog,
      },
    };
  }

  async getKey(path: string): Promise<Uint8Array> {
    return hkdf(sha256, this.keySeed, utf8ToBytes("sigil-simulated-dstack-key"), utf8ToBytes(path), 32);
  }

  /** Collateral for the mock platform, valid now; re-signed daily so a long dev run never outlives it. */
  collateral(): Promise<DcapCollateral> {
    const nowMs = this.now();
    if (!this.issued || nowMs - this.issued.atMs > COLLATERAL_REISSUE_MS) {
      this.issued = { atMs: nowMs, collateral: this.pki.collateral(Math.floor(nowMs / 1000)) };
      this.issued.collateral.catch(() => (this.issued = undefined));
    }
    return this.issued.collateral;
  }
}

const OS_IMAGE_HASH = bytesToHex(label("SIMULATED-OS-IMAGE-NOT-DSTACK-OS", 32));
const DEVICE_ID = bytesToHex(label("SIMULATED-DEVICE-NOT-A-TDX-HOST", 32));

function appName(appCompose: string): string {
  try {
    const name = (JSON.parse(appCompose) as { name?: unknown }).name;
    if (typeof name === "string" && name) return name;
  } catch {
    // not JSON: dstack would have refused it, but the simulation need not
  }
  return "sigil";
}
