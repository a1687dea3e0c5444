// The verifier's checks against a deployment, in docs/design/attestation.md's order, as `sigil verify` runs
// them and as the dashboard's Attestation page runs them in the browser:
//   1 quote (dcap-qvl: signature and TCB status; Intel's root, or the served mock root of a
//     simulated TEE when allowed), plus `freshness` (the quote was made for a random nonce sent
//     now), 2 event_log (replayed to RTMR0–3), 3 claims (RTMR3), 4 info.* (compose hash =
//     SHA-256(app_compose) = the RTMR3 claim, images pinned, an expected compose hash), 5 evidence.*
//     (sha256sum.txt against its files, the evidence quote verified and bound to sha256sum.txt),
//   6 tls (the served certificate is the evidence one), 7 governance (allowedComposeHashes on the
//     app's contract), 8 os (measurements allow-listed).
// A check that cannot apply is `skipped` and says why. A check a real deployment requires is never
// skipped for want of an option: without an RPC URL, governance fails. What needs more than fetch
// is given by the caller: the certificate a TLS handshake presents (Node's `node:tls` for the CLI;
// a browser page cannot read it, so there `tls` is skipped and says so).
//
// A base URL may front several enclave instances (the edge routes to all of them), and answers
// from different VMs cannot be checked against each other. So `verifyEveryInstance` first asks
// which instances serve (the edge's /core/v1/health, or an enclave's own /health), then runs every
// check once per instance, pinned to it (`X-Sigil-Instance`), and adds an `instance` check: the
// quote's RTMR3 names that instance and no answer came from another.
import { getCollateral } from "@phala/dcap-qvl";
import { sha256 } from "@noble/hashes/sha256";
import { bytesToHex } from "@noble/hashes/utils";
import type { PublicClient } from "viem";
import { toBytes } from "./bytes.ts";
import { parseCollateral, type Collateral } from "./dcap.ts";
import { checkEvidenceFiles, checkEvidenceReportData, parseSha256Sums } from "./evidence.ts";
import { governanceAllows } from "./governance.ts";
import { checkInfo, parseInfo } from "./info.ts";
import { parseQuote, type TdxQuote } from "./quote.ts";
import { nonceReportData } from "./reportData.ts";
import { quoteCheck, verifyAttestation } from "./verify.ts";

export type Status = "pass" | "fail" | "skipped";
/** One check's result; `instance` is the instance it was pinned to (absent when the run was not pinned). */
export type CheckLine = { check: string; status: Status; detail: string; simulated: boolean; instance?: string };

export type OsMeasurements = { mrtd: string; rtmr0: string; rtmr1: string; rtmr2: string };

export type VerifyOptions = {
  /** Unix seconds for dcap-qvl (default: now). */
  now?: number;
  /** Intel collateral for the quotes (dcap-qvl's JSON shape); otherwise fetched from `pccsUrl`. */
  collateral?: Collateral;
  pccsUrl?: string;
  /** For check 7: an RPC of the chain the app's contract lives on (Base in production). Required unless simulated. */
  rpcUrl?: string;
  /** For check 7: a client of `rpcUrl` (viem's createPublicClient over http, given by the caller so the browser's verifier carries none). */
  rpcClient?: (rpcUrl: string) => Pick<PublicClient, "readContract">;
  expectComposeHash?: string;
  allowSimulated?: boolean;
  /** Ask for the cached quote instead of a fresh one over a random nonce (a recorded deployment). */
  noNonce?: boolean;
  /** For check 8: allowed `{mrtd, rtmr0, rtmr1, rtmr2}` sets (hex). */
  osAllow?: OsMeasurements[];
  /** Pin every request to this enclave instance (`X-Sigil-Instance`) and check that it answered. */
  instance?: string;
  /**
   * For check 6: the certificate (DER) the server at `url` presents in its TLS handshake. Absent
   * where no handshake can be inspected (a browser): `tls` is then skipped and says why.
   */
  servedCertificate?: (url: URL) => Promise<Uint8Array>;
  /** Why `servedCertificate` is absent, for the skipped `tls` line. */
  noTlsReason?: string;
};

/** The header that names, and pins, the enclave instance of an attestation answer. */
export const INSTANCE_HEADER = "x-sigil-instance";

export const DEFAULT_PCCS = "https://pccs.phala.network/sgx/certification/v4/";

type Answer = { status: number; text: string; bytes: Uint8Array; simulated: boolean; instance: string | null };

async function getFrom(url: string, instance?: string): Promise<Answer> {
  const res = await fetch(url, {
    signal: AbortSignal.timeout(30_000),
    ...(instance ? { headers: { [INSTANCE_HEADER]: instance } } : {}),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  return {
    status: res.status,
    text: new TextDecoder().decode(bytes),
    bytes,
    simulated: res.headers.get("x-attestation-simulated") === "1",
    instance: res.headers.get(INSTANCE_HEADER),
  };
}

async function getJson<T>(
  get: (url: string) => Promise<Answer>,
  url: string,
): Promise<{ body: T; simulated: boolean }> {
  const r = await get(url);
  if (r.status !== 200) throw new Error(`${url} answered ${r.status}`);
  try {
    return { body: JSON.parse(r.text) as T, simulated: r.simulated };
  } catch {
    throw new Error(`${url} did not answer JSON`);
  }
}

const hexToBytes = (hex: string): Uint8Array => toBytes(hex, "hex");

function pemToDer(pem: string): Uint8Array | undefined {
  const m = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(pem);
  return m ? Uint8Array.from(atob((m[1] as string).replace(/\s+/g, "")), (c) => c.charCodeAt(0)) : undefined;
}

const sha256Hex = (bytes: Uint8Array) => bytesToHex(sha256(bytes));

/** Runs every check against the deployment at `baseUrl`. Never throws for a failed check. */
export async function verifyDeployment(baseUrl: string, options: VerifyOptions = {}): Promise<CheckLine[]> {
  const base = baseUrl.replace(/\/+$/, "");
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const lines: CheckLine[] = [];
  let simulated = false;
  const pin = options.instance?.toLowerCase();
  const add = (check: string, status: Status, detail: string) =>
    lines.push({ check, status, detail, simulated, ...(pin ? { instance: pin } : {}) });
  /** Answers that named an instance other than the pinned one: they came from another VM. */
  const strays: string[] = [];
  const get = async (url: string) => {
    const answer = await getFrom(url, pin);
    if (pin && answer.instance !== null && answer.instance.toLowerCase() !== pin)
      strays.push(`${new URL(url).pathname} came from instance ${answer.instance}`);
    return answer;
  };

  // The quote: fresh over a random nonce, unless told otherwise.
  const nonce = bytesToHex(crypto.getRandomValues(new Uint8Array(32)));
  let bundle: { quote: string; event_log: string; simulated?: boolean };
  try {
    const answer = await getJson<typeof bundle>(
      get,
      options.noNonce ? `${base}/attestation` : `${base}/attestation?nonce=${nonce}`,
    );
    bundle = answer.body;
    simulated = answer.simulated || bundle.simulated === true;
  } catch (err) {
    add("quote", "fail", `could not read /attestation: ${(err as Error).message}`);
    return lines;
  }

  // Whose root, and which collateral.
  let rootCaDer: Uint8Array | undefined;
  let collateral: Collateral | undefined = options.collateral;
  const collateralFor = async (quote: string): Promise<Collateral> =>
    collateral ?? parseCollateral(await getCollateral(options.pccsUrl ?? DEFAULT_PCCS, hexToBytes(quote)));
  if (simulated) {
    if (!options.allowSimulated) {
      add(
        "quote",
        "fail",
        "the deployment serves a SIMULATED TEE (its quotes are signed by a mock root, not by Intel): pass --allow-simulated to check it as a development stack",
      );
      return lines;
    }
    try {
      const served = await getJson<{ root_ca_der: string; collateral: unknown }>(
        get,
        `${base}/attestation/simulated-collateral`,
      );
      rootCaDer = hexToBytes(served.body.root_ca_der);
      collateral = parseCollateral(served.body.collateral);
    } catch (err) {
      add("quote", "fail", `could not read the simulated root and collateral: ${(err as Error).message}`);
      return lines;
    }
  }

  // Checks 1–3.
  let result: Awaited<ReturnType<typeof verifyAttestation>>;
  try {
    result = verifyAttestation(
      { quote: bundle.quote, event_log: bundle.event_log },
      {
        collateral: await collateralFor(bundle.quote),
        now,
        ...(rootCaDer ? { rootCaDer } : {}),
        ...(options.noNonce ? {} : { expectedReportData: nonceReportData(nonce) }),
      },
    );
  } catch (err) {
    add("quote", "fail", `no collateral for the quote: ${(err as Error).message}`);
    return lines;
  }
  for (const c of result.checks)
    add(c.check === "report_data" ? "freshness" : c.check, c.ok ? "pass" : "fail", c.detail);
  if (options.noNonce)
    add("freshness", "skipped", "--no-nonce: the cached quote was checked, not one made for this run");

  // Check 4: /info.
  let info: ReturnType<typeof parseInfo> | undefined;
  try {
    info = parseInfo((await getJson<unknown>(get, `${base}/info`)).body);
  } catch (err) {
    add("info", "fail", `could not read /info: ${(err as Error).message}`);
  }
  if (info && result.claims) {
    for (const c of checkInfo(info, result.claims)) add(c.check, c.ok ? "pass" : "fail", c.detail);
  } else if (info) {
    add("info", "fail", "RTMR3 makes no claims to compare /info with (see the claims check)");
  }
  if (options.expectComposeHash) {
    const expected = options.expectComposeHash.replace(/^0x/, "").toLowerCase();
    const got = result.claims?.composeHash;
    add(
      "info.expected_compose_hash",
      got === expected ? "pass" : "fail",
      got === expected
        ? `compose hash ${got} is the expected one`
        : `compose hash ${got ?? "(unknown)"}, expected ${expected}`,
    );
  }

  // Check 5: evidences.
  const evidencePem = await checkEvidences(base, get, add, async (quote) => ({
    collateral: await collateralFor(quote),
    now,
    ...(rootCaDer ? { rootCaDer } : {}),
  }));

  // Check 6: TLS.
  await checkTls(new URL(base), evidencePem, options, add);

  // Check 7: governance.
  await checkGovernance(result.claims, simulated, options, add);

  // The instance: every answer came from the pinned VM, and its quote says it is that VM.
  if (pin) {
    const claimed = result.claims?.instanceId;
    if (strays.length > 0) add("instance", "fail", `pinned to instance ${pin}, but ${strays.join("; ")}`);
    else if (claimed !== pin)
      add(
        "instance",
        "fail",
        `pinned to instance ${pin}, but the quote's RTMR3 claims instance ${claimed || "(none)"}`,
      );
    else add("instance", "pass", `every answer came from instance ${pin}, which the quote's RTMR3 names`);
  }

  // Check 8: the OS measurements.
  checkOs(result.quote, options.osAllow, add);
  return lines;
}

/** Where a check's line goes. */
type Add = (check: string, status: Status, detail: string) => void;
/** How a check reads a URL of the deployment (pinned to its instance, strays noted). */
type Get = (url: string) => ReturnType<typeof getFrom>;

/**
 * Check 5: the evidence files (/evidences/) match their sha256sum.txt, and its quote is sound and
 * binds that file; answers the evidence certificate (DER), for the TLS check.
 */
async function checkEvidences(
  base: string,
  get: Get,
  add: Add,
  quoteOptions: (quote: string) => Promise<Parameters<typeof quoteCheck>[1]>,
): Promise<Uint8Array | undefined> {
  let evidencePem: Uint8Array | undefined;
  try {
    const sums = await get(`${base}/evidences/sha256sum.txt`);
    if (sums.status !== 200) throw new Error(`/evidences/sha256sum.txt answered ${sums.status}`);
    const files: Record<string, Uint8Array> = {};
    for (const entry of parseSha256Sums(sums.text)) {
      const f = await get(`${base}/evidences/${encodeURIComponent(entry.name)}`);
      if (f.status === 200) files[entry.name] = f.bytes;
      if (/^cert-.*\.pem$/.test(entry.name) && f.status === 200) evidencePem = pemToDer(f.text);
    }
    for (const c of checkEvidenceFiles(sums.text, files)) add(c.check, c.ok ? "pass" : "fail", c.detail);
    const evidenceQuote = (await getJson<{ quote: string }>(get, `${base}/evidences/quote.json`)).body.quote;
    let parsed: TdxQuote | undefined;
    try {
      parsed = parseQuote(evidenceQuote);
      const { result: q } = quoteCheck(parsed, await quoteOptions(evidenceQuote));
      add("evidence.quote", q.ok ? "pass" : "fail", q.detail);
    } catch (err) {
      add("evidence.quote", "fail", (err as Error).message);
    }
    const bound = checkEvidenceReportData(parsed ?? evidenceQuote, sums.bytes);
    add(bound.check, bound.ok ? "pass" : "fail", bound.detail);
  } catch (err) {
    add("evidence", "fail", `could not read the evidences: ${(err as Error).message}`);
  }
  return evidencePem;
}

/** Check 6: the certificate served in the TLS handshake is the evidence certificate. */
async function checkTls(
  url: URL,
  evidencePem: Uint8Array | undefined,
  options: VerifyOptions,
  add: Add,
): Promise<void> {
  if (url.protocol !== "https:") {
    add("tls", "skipped", `${url.protocol.replace(":", "")}: not TLS, no certificate to compare`);
  } else if (!options.servedCertificate) {
    add("tls", "skipped", options.noTlsReason ?? "no way to read the certificate served in the TLS handshake here");
  } else if (!evidencePem) {
    add("tls", "fail", "the evidences hold no certificate to compare the served one with");
  } else {
    try {
      const served = sha256Hex(await options.servedCertificate(url));
      const evidence = sha256Hex(evidencePem);
      add(
        "tls",
        served === evidence ? "pass" : "fail",
        served === evidence
          ? `the certificate served in the handshake is the evidence certificate (DER SHA-256 ${served})`
          : `the certificate served in the handshake (DER SHA-256 ${served}) is not the evidence certificate (DER SHA-256 ${evidence})`,
      );
    } catch (err) {
      add("tls", "fail", `TLS handshake failed: ${(err as Error).message}`);
    }
  }
}

/** Check 7: the app's governance contract allows the compose hash RTMR3 claims (real hardware only). */
async function checkGovernance(
  claims: { composeHash?: string; appId?: string } | undefined,
  simulated: boolean,
  options: VerifyOptions,
  add: Add,
): Promise<void> {
  const composeHash = claims?.composeHash;
  const appId = claims?.appId;
  if (simulated) {
    add("governance", "skipped", "a simulated TEE has no app contract on chain");
  } else if (!options.rpcUrl || !options.rpcClient) {
    // Required for real hardware: without it nobody asked whether the app's owner allows this code.
    add(
      "governance",
      "fail",
      `not checked: pass --rpc-url <url>, an RPC of the chain the app's contract${appId ? ` 0x${appId}` : ""} lives on (Base in production), to ask its allowedComposeHashes(${composeHash ? `0x${composeHash}` : "<compose hash>"})`,
    );
  } else if (!composeHash || !appId) {
    add("governance", "fail", "RTMR3 names no app id and compose hash to ask about");
  } else {
    try {
      const allowed = await governanceAllows(options.rpcClient(options.rpcUrl), appId, composeHash);
      add(
        "governance",
        allowed ? "pass" : "fail",
        allowed
          ? `0x${appId} allows compose hash ${composeHash}`
          : `0x${appId} does not allow compose hash ${composeHash}`,
      );
    } catch (err) {
      add("governance", "fail", `allowedComposeHashes on 0x${appId} failed: ${(err as Error).message.split("\n")[0]}`);
    }
  }
}

/** Check 8: the OS measurements (MRTD, RTMR0–2) are on the allow-list given. */
function checkOs(q: TdxQuote | undefined, osAllow: VerifyOptions["osAllow"], add: Add): void {
  if (!osAllow) {
    add("os", "skipped", "OS not verified: no --os-allow list of MRTD and RTMR0–2 was given");
  } else if (!q) {
    add("os", "fail", "no quote to read the measurements from");
  } else {
    const n = (hex: string) => hex.replace(/^0x/, "").toLowerCase();
    const ok = osAllow.some(
      (m) =>
        n(m.mrtd) === n(q.mrTd) &&
        n(m.rtmr0) === n(q.rtmrs[0]) &&
        n(m.rtmr1) === n(q.rtmrs[1]) &&
        n(m.rtmr2) === n(q.rtmrs[2]),
    );
    add(
      "os",
      ok ? "pass" : "fail",
      ok
        ? "MRTD and RTMR0–2 are on the allow-list"
        : `MRTD ${q.mrTd.slice(0, 16)}… and RTMR0–2 are not on the allow-list`,
    );
  }
}

/**
 * The enclave instances serving at `baseUrl`: those the edge's /core/v1/health lists as answering,
 * else the one an enclave's own /health names; undefined when neither says (an older deployment,
 * or a stand-in that serves only the attestation endpoints).
 */
export async function servingInstances(baseUrl: string): Promise<string[] | undefined> {
  const base = baseUrl.replace(/\/+$/, "");
  const read = async (path: string): Promise<unknown> => {
    try {
      const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(30_000) });
      // The edge's /health is its report with 503 too, when it is not serving.
      if (res.status !== 200 && res.status !== 503) return undefined;
      return await res.json();
    } catch {
      return undefined;
    }
  };
  const edge = (await read("/core/v1/health")) as { enclaves?: Array<{ instance_id?: unknown }> } | undefined;
  if (Array.isArray(edge?.enclaves)) {
    const ids = edge.enclaves
      .map((e) => e.instance_id)
      .filter((id): id is string => typeof id === "string" && id !== "");
    return [...new Set(ids.map((id) => id.toLowerCase()))];
  }
  const own = (await read("/health")) as { instance_id?: unknown } | undefined;
  return typeof own?.instance_id === "string" && own.instance_id !== "" ? [own.instance_id.toLowerCase()] : undefined;
}

export type InstanceRun = { instance: string | null; lines: CheckLine[] };

/**
 * Every check, once per instance serving at `baseUrl` (or only `options.instance`), each run pinned
 * to its instance; one unpinned run when the deployment does not say which instances serve.
 */
export async function verifyEveryInstance(baseUrl: string, options: VerifyOptions = {}): Promise<InstanceRun[]> {
  const instances = options.instance ? [options.instance.toLowerCase()] : await servingInstances(baseUrl);
  if (instances === undefined) return [{ instance: null, lines: await verifyDeployment(baseUrl, options) }];
  if (instances.length === 0) {
    return [
      {
        instance: null,
        lines: [
          {
            check: "instances",
            status: "fail",
            detail: "the deployment lists no enclave instance that answers (GET /core/v1/health)",
            simulated: false,
          },
        ],
      },
    ];
  }
  const runs: InstanceRun[] = [];
  for (const instance of instances)
    runs.push({ instance, lines: await verifyDeployment(baseUrl, { ...options, instance }) });
  return runs;
}
