// `sigil verify <base_url>`: the command over the verifier's checks (shared/attestation/
// deployment.ts, which says what each check is), every serving instance in turn: one line per check
// (or JSON), exit 0 only when none failed on any instance, 2 for a usage error. What only Node can
// do is here: reading the option files, and check 6's TLS handshake (`servedCertificate`), which the
// shared checks take as a parameter because a browser page cannot make one.
import { readFileSync } from "node:fs";
import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { isIP } from "node:net";
import { connect } from "node:tls";
import { createPublicClient, http } from "viem";
import { z } from "zod";
import {
  INSTANCE_HEADER,
  parseCollateral,
  verifyDeployment as verifyDeploymentIn,
  verifyEveryInstance as verifyEveryInstanceIn,
  type CheckLine,
  type InstanceRun,
  type OsMeasurements,
  type Status,
  type VerifyOptions,
} from "../../shared/attestation/index.ts";

export { INSTANCE_HEADER, type CheckLine, type InstanceRun, type OsMeasurements, type Status, type VerifyOptions };

const measurement = z
  .string()
  .regex(/^(0x)?[0-9a-fA-F]{96}$/, "must be 48 bytes of hex")
  .transform((v) => v.replace(/^0x/, "").toLowerCase());
const osAllowSchema = z
  .array(z.looseObject({ mrtd: measurement, rtmr0: measurement, rtmr1: measurement, rtmr2: measurement }))
  .min(1, "lists no measurement set");

/**
 * Reads an `--os-allow` file: a JSON array of `{mrtd, rtmr0, rtmr1, rtmr2}` (48-byte hex each, 0x
 * optional; other keys, such as a label, are ignored). Throws a message naming what is wrong.
 */
export function parseOsAllow(text: string): OsMeasurements[] {
  const parsed = osAllowSchema.safeParse(jsonOf(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? [])
      .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
      .join("")
      .replace(/^\./, "");
    throw new Error(
      `${path ? `${path}: ` : ""}${issue?.message ?? "invalid"} (expected a JSON array of {"mrtd", "rtmr0", "rtmr1", "rtmr2"} objects, 48-byte hex each)`,
    );
  }
  return parsed.data.map(({ mrtd, rtmr0, rtmr1, rtmr2 }) => ({ mrtd, rtmr0, rtmr1, rtmr2 }));
}

/**
 * The certificate `url`'s server presents in the TLS handshake (DER). Not validated against any CA:
 * check 6 compares it with the evidence certificate instead.
 */
export async function servedCertificate(url: URL): Promise<Uint8Array> {
  const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
  return new Promise<Uint8Array>((resolve, reject) => {
    // SNI carries host names only (RFC 6066): none for an IP address.
    const socket = connect(
      { host, port: Number(url.port || 443), ...(isIP(host) ? {} : { servername: host }), rejectUnauthorized: false },
      () => {
        const cert = socket.getPeerCertificate();
        socket.end();
        if (!cert?.raw) reject(new Error("the server presented no certificate"));
        else resolve(new Uint8Array(cert.raw));
      },
    );
    socket.once("error", reject);
    socket.setTimeout(15_000, () => socket.destroy(new Error("TLS handshake timed out")));
  });
}

/** What the CLI gives the shared checks: Node's TLS handshake, and viem's client of --rpc-url. */
const nodeSide: VerifyOptions = { servedCertificate, rpcClient: (url) => createPublicClient({ transport: http(url) }) };

/** Every check against the deployment at `baseUrl`, the TLS check by a handshake of Node's own. */
export function verifyDeployment(baseUrl: string, options: VerifyOptions = {}): Promise<CheckLine[]> {
  return verifyDeploymentIn(baseUrl, { ...nodeSide, ...options });
}

/** Every check once per instance serving at `baseUrl` (see shared/attestation/deployment.ts), TLS by Node's handshake. */
export function verifyEveryInstance(baseUrl: string, options: VerifyOptions = {}): Promise<InstanceRun[]> {
  return verifyEveryInstanceIn(baseUrl, { ...nodeSide, ...options });
}

export const verifyUsage = `usage: sigil verify <base_url> [--allow-simulated] [--json] [--now <unix seconds>]
                    [--collateral <file>] [--pccs-url <url>] [--rpc-url <url>]
                    [--expect-compose-hash <hex>] [--os-allow <file>] [--no-nonce]
                    [--instance <id>]

  Checks the deployment at <base_url> (an enclave's https://<domain>, or the edge): the quote
  (fresh, over a random nonce), its event log, RTMR3's claims, /info, the evidences, TLS, the
  governance contract and the OS measurements — for every enclave instance that serves there, in
  turn, each pinned to its instance (X-Sigil-Instance) so that every answer comes from one VM. One
  line per check (--json: one JSON object per line, naming its instance); a check that cannot
  apply is skipped and says why. Exit 0 when no check fails on any instance, 1 when one does, 2
  for a usage error.

  --rpc-url <url>      required for a real deployment: an RPC of the chain the app's contract
                       lives on (Base in production); governance fails without it (skipped only
                       for a simulated TEE)
  --now <seconds>      the time (Unix seconds) the quote's collateral and TCB are judged at
                       (default: now)
  --collateral <file>  Intel collateral (dcap-qvl JSON) instead of fetching it from --pccs-url
  --os-allow <file>    a JSON array of allowed {"mrtd", "rtmr0", "rtmr1", "rtmr2"} (48-byte hex
                       each); without it the OS is reported as not verified
  --no-nonce           check the cached quote instead of a fresh one (freshness is skipped)
  --instance <id>      check only this instance (as GET /core/v1/health lists them)

  The local stack: npm run -s sigil -- verify http://127.0.0.1:8787 --allow-simulated`;

/** Reads and parses an option's file (`flag` "" for a positional one); any problem is thrown as `<flag> <file>: <what>`. */
export function readOptionFile<T>(flag: string, file: string, parse: (text: string) => T): T {
  const where = flag ? `${flag} ${file}` : file;
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`${where}: cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    return parse(text);
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}`);
  }
}

/** JSON text as a value, or "is not JSON" (readOptionFile's parse for a JSON file). */
export function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error("is not JSON");
  }
}

/**
 * A verify command's line: `args` parsed with `options` (and -h/--help, which prints `usage`), or
 * the exit code when there is nothing to run: 0 after the help, 2 after `refuse` printed what is wrong.
 */
export function commandLine<const O extends ParseArgsOptionsConfig>(
  args: string[],
  options: O,
  usage: string,
  refuse: (message: string) => void,
) {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { ...options, help: { type: "boolean", short: "h" } },
    });
  } catch (err) {
    refuse((err as Error).message);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    console.log(usage);
    return 0;
  }
  return parsed;
}

/** The `sigil verify` command; its exit code. */
export async function verifyCommand(args: string[]): Promise<number> {
  const parsed = commandLine(
    args,
    {
      json: { type: "boolean" },
      "allow-simulated": { type: "boolean" },
      "no-nonce": { type: "boolean" },
      now: { type: "string" },
      collateral: { type: "string" },
      "pccs-url": { type: "string" },
      "rpc-url": { type: "string" },
      "expect-compose-hash": { type: "string" },
      "os-allow": { type: "string" },
      instance: { type: "string" },
    },
    verifyUsage,
    (message) => console.error(`sigil verify: ${message}\n\n${verifyUsage}`),
  );
  if (typeof parsed === "number") return parsed;
  const { values, positionals } = parsed;
  const baseUrl = positionals[0];
  if (positionals.length !== 1 || !baseUrl || !/^https?:\/\//.test(baseUrl)) {
    console.error(`sigil verify: give one http(s) base URL\n\n${verifyUsage}`);
    return 2;
  }
  const options: VerifyOptions = {};
  try {
    if (values.now !== undefined) {
      if (!/^\d+$/.test(values.now)) throw new Error("--now takes Unix seconds");
      options.now = Number(values.now);
    }
    if (values.collateral !== undefined)
      options.collateral = readOptionFile("--collateral", values.collateral, (text) =>
        parseCollateral(JSON.parse(text)),
      );
    if (values["os-allow"] !== undefined)
      options.osAllow = readOptionFile("--os-allow", values["os-allow"], parseOsAllow);
    if (values["expect-compose-hash"] !== undefined) {
      if (!/^(0x)?[0-9a-fA-F]{64}$/.test(values["expect-compose-hash"]))
        throw new Error("--expect-compose-hash takes 64 hex digits");
      options.expectComposeHash = values["expect-compose-hash"];
    }
    if (values.instance !== undefined) {
      if (!/^[0-9a-fA-F]{8,128}$/.test(values.instance)) throw new Error("--instance takes an instance id (hex)");
      options.instance = values.instance;
    }
  } catch (err) {
    console.error(`sigil verify: ${(err as Error).message}\n\n${verifyUsage}`);
    return 2;
  }
  if (values["pccs-url"]) options.pccsUrl = values["pccs-url"];
  if (values["rpc-url"]) options.rpcUrl = values["rpc-url"];
  if (values["allow-simulated"]) options.allowSimulated = true;
  if (values["no-nonce"]) options.noNonce = true;

  const runs = await verifyEveryInstance(baseUrl, options);
  const lines = runs.flatMap((r) => r.lines);
  for (const [i, run] of runs.entries()) {
    if (!values.json && run.instance !== null) console.log(`instance ${run.instance} (${i + 1} of ${runs.length})`);
    for (const l of run.lines) {
      if (values.json) console.log(JSON.stringify(l));
      else
        console.log(
          `${l.status.toUpperCase().padEnd(7)} ${l.check.padEnd(28)} ${l.simulated ? "SIMULATED  " : ""}${l.detail}`,
        );
    }
  }
  const failedCount = lines.filter((l) => l.status === "fail").length;
  const failedInstances = runs
    .filter((r) => r.lines.some((l) => l.status === "fail"))
    .map((r) => r.instance ?? "(unpinned)");
  const scope = runs.length > 1 || runs[0]?.instance ? ` on ${runs.length} instance(s)` : "";
  if (!values.json) {
    console.log(
      failedCount === 0
        ? `verified: every required check passed${scope}${lines.some((l) => l.simulated) ? " (SIMULATED TEE: nothing here is about real hardware)" : ""}`
        : `NOT verified: ${failedCount} check(s) failed${runs.length > 1 ? ` (instance ${failedInstances.join(", ")})` : ""}`,
    );
  }
  return failedCount === 0 ? 0 : 1;
}
