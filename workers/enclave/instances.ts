// Which configured enclave is which instance (issue 11, point 15): every enclave names its instance
// (the dstack instance id, the one its quotes' RTMR3 and /info attest) in its public /health and in
// `X-Sigil-Instance` on its answers. The edge remembers what it learned, per isolate, so that a
// client that pins an instance for /attestation, /info and /evidences/… is sent to that VM every
// time. Routing only: a verifier checks the instance in the quote itself, never this header.
import { SigilError } from "../../shared/errors.ts";
import type { EdgeConfig } from "../config.ts";

/** How long what an enclave said of itself is believed before it is asked again. */
const REMEMBER_MS = 60_000;

/** Per isolate: base URL → the instance it last said it was, and when. */
const known = new Map<string, { instanceId: string; at: number }>();

/** Records that the enclave at `base` is `instanceId` (from an answer of its own). */
export function noteInstance(base: string, instanceId: string | null | undefined): void {
  if (instanceId) known.set(base, { instanceId, at: Date.now() });
}

/** The instance the enclave at `base` last said it was, if it said so recently. */
export function instanceAt(base: string): string | undefined {
  const k = known.get(base);
  return k && Date.now() - k.at < REMEMBER_MS ? k.instanceId : undefined;
}

/** Forgets what `base` said (it answered as another instance: it was replaced). */
export function forgetInstance(base: string): void {
  known.delete(base);
}

/**
 * The configured enclave that is instance `instanceId`: remembered, or found by asking every
 * enclave's public /health (cheap for it: no chain call). 404 instance_not_found when none is.
 */
export async function enclaveOfInstance(config: EdgeConfig, instanceId: string): Promise<string> {
  const remembered = config.enclaveUrls.find((base) => instanceAt(base) === instanceId);
  if (remembered) return remembered;
  await Promise.all(
    config.enclaveUrls.map(async (base) => {
      try {
        const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(5_000) });
        const body = (await res.json()) as { instance_id?: unknown };
        noteInstance(
          base,
          typeof body.instance_id === "string" ? body.instance_id : res.headers.get("x-sigil-instance"),
        );
      } catch {
        // not answering: it serves no instance now
      }
    }),
  );
  const found = config.enclaveUrls.find((base) => instanceAt(base) === instanceId);
  if (!found)
    throw new SigilError(
      "instance_not_found",
      `no enclave this service routes to is instance ${instanceId}; GET /core/v1/health lists the serving instances`,
    );
  return found;
}
