// Attestation: the checks `sigil verify` makes (shared/attestation/deployment.ts, the same code),
// run by this page against the deployment that served it, every serving enclave instance in turn,
// each check with its result and why. A simulated TEE (the local stack) is said so above everything
// else. The verifier (dcap-qvl and its X.509 and curve code) is a chunk of its own, downloaded when
// this page opens, so the other pages do not carry it.
import type { CheckLine, InstanceRun } from "../../../shared/attestation/deployment.ts";
import { ErrorNote, Loading, Table, useLoad } from "../ui.tsx";

/** What each check establishes (by the name's part before a dot), in the verifier's order. */
const MEANING: Array<[string, string]> = [
  [
    "quote",
    "The quote is signed by a chain that leads to Intel's root (dcap-qvl) and its platform's TCB status is accepted.",
  ],
  ["freshness", "The quote was made now, over a random nonce this page sent."],
  ["event_log", "The event log replays to the quote's RTMR0–3."],
  ["claims", "RTMR3 names the app, its compose hash (the code that runs) and the instance."],
  ["info", "/info's app-compose hashes to that compose hash, and every image is pinned by its digest."],
  ["evidence", "The published evidence files match sha256sum.txt, and a quote binds its hash."],
  ["tls", "The certificate served in the TLS handshake is the evidence certificate."],
  ["governance", "The app's contract on chain allows this compose hash."],
  ["instance", "Every answer came from the instance the quote names."],
  ["os", "The OS measurements (MRTD, RTMR0–2) are on an allow-list."],
];

/** Why the page cannot make check 6 itself. */
const NO_TLS =
  "a web page cannot read the certificate of its own TLS connection: `sigil verify` makes the handshake and compares it";

async function runChecks(): Promise<InstanceRun[]> {
  const { verifyEveryInstance } = await import("../../../shared/attestation/deployment.ts");
  // Intel's collateral for a real quote comes from the verifier's default PCCS, which the page's CSP allows.
  return verifyEveryInstance(location.origin, { allowSimulated: true, noTlsReason: NO_TLS });
}

const RESULT: Record<CheckLine["status"], string> = { pass: "Passed", fail: "Failed", skipped: "Skipped" };

export function Attestation() {
  const checked = useLoad(runChecks);
  const lines = checked.data?.flatMap((r) => r.lines) ?? [];
  const failed = lines.filter((l) => l.status === "fail").length;
  const simulated = lines.some((l) => l.simulated);
  return (
    <>
      <p>
        The checks <code>sigil verify</code> makes, run by this page against <code>{location.origin}</code>. This page
        was served by the deployment it checks; for a check that does not rest on its code, run{" "}
        <code>npx sigil verify {location.origin}</code> on your own machine.
      </p>
      {checked.loading && <Loading what="the deployment's attestation (fetching the verifier and the quotes)" />}
      <ErrorNote error={checked.error} />
      {checked.data && (
        <>
          {simulated && (
            <p class="warning" role="note">
              <strong>Simulated TEE.</strong> This deployment's quotes are signed by a development root, not by Intel:
              nothing here is about real hardware.
            </p>
          )}
          <p role="status" class={failed === 0 ? "verdict ok" : "verdict bad"}>
            {failed === 0
              ? `Verified: every required check passed on ${checked.data.length} instance(s)${simulated ? " (simulated)" : ""}.`
              : `Not verified: ${failed} check(s) failed.`}
          </p>
          {checked.data.map((run) => (
            <Table
              caption={run.instance ? `Instance ${run.instance}` : "The deployment"}
              head={["Check", "Result", "Detail"]}
              rows={run.lines.map((l) => [
                <code>{l.check}</code>,
                <span class={`result ${l.status}`}>{RESULT[l.status]}</span>,
                l.detail,
              ])}
            />
          ))}
        </>
      )}
      <button type="button" class="secondary" disabled={checked.loading} onClick={checked.reload}>
        Run the checks again
      </button>
      <h2>What each check establishes</h2>
      <dl class="meanings">
        {MEANING.map(([check, meaning]) => (
          <>
            <dt>
              <code>{check}</code>
            </dt>
            <dd>{meaning}</dd>
          </>
        ))}
      </dl>
    </>
  );
}
