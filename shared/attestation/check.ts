// One line of the verifier's answer (docs/design/attestation.md, The verifier): which check, whether it passed,
// and a sentence saying what was found. `simulated` marks checks made against the simulated TEE's
// mock root, which prove nothing about real hardware.

export type CheckResult = {
  /** A stable name: `quote`, `report_data`, `event_log`, `claims`, `info.compose_hash`, … */
  check: string;
  ok: boolean;
  detail: string;
  simulated?: boolean;
};

export function passed(check: string, detail: string): CheckResult {
  return { check, ok: true, detail };
}

export function failed(check: string, detail: string): CheckResult {
  return { check, ok: false, detail };
}
