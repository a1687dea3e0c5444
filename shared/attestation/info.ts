// Check 4 of the verifier (docs/design/attestation.md): `/info` against the claims RTMR3 proved. The compose
// hash is SHA-256 of the raw app-compose text exactly as served (never re-serialized: any change of
// whitespace or key order changes the hash), and every image the compose runs must be pinned by
// digest, since a tag can be moved to other code after the hash was approved.
import { sha256 } from "@noble/hashes/sha256";
import { utf8ToBytes } from "@noble/hashes/utils";
import * as z from "./schema.ts";
import { normalizeHex, toHex } from "./bytes.ts";
import { failed, passed, type CheckResult } from "./check.ts";
import { AttestationError, parsedOr, parseJsonAs } from "./errors.ts";
import type { Rtmr3Claims } from "./eventLog.ts";

/** `/info` as the enclave serves it, with `tcb_info` parsed (dstack's Info gives it as a JSON string). */
export type Info = {
  app_id: string;
  compose_hash: string;
  instance_id: string;
  tcb_info: { app_compose: string } & Record<string, unknown>;
};

const tcbInfoSchema = z.looseObject({ app_compose: z.string() });
const infoSchema = z.looseObject({
  app_id: z.string(),
  compose_hash: z.string(),
  instance_id: z.string(),
  tcb_info: z.union([z.string(), z.record(z.string(), z.unknown())]),
});

/** Reads `/info` (its JSON text or the parsed body); `tcb_info` may be an object or a JSON string. */
export function parseInfo(input: unknown): Info {
  const parsed = infoSchema.safeParse(parsedOr("invalid_info", input, "/info is not valid JSON"));
  if (!parsed.success) throw new AttestationError("invalid_info", `/info: ${describeIssue(parsed.error)}`);
  const tcbInfo = parsedOr("invalid_info", parsed.data.tcb_info, "/info tcb_info is a string but not JSON");
  const tcb = tcbInfoSchema.safeParse(tcbInfo);
  if (!tcb.success) throw new AttestationError("invalid_info", `/info tcb_info: ${describeIssue(tcb.error)}`);
  return { ...parsed.data, tcb_info: tcb.data } as Info;
}

/** SHA-256 of the app-compose text's UTF-8 bytes, lowercase hex: what dstack logs as compose-hash. */
export function composeHash(appCompose: string): string {
  return toHex(sha256(utf8ToBytes(appCompose)));
}

const PINNED = /@sha256:[0-9a-f]{64}$/;
// `image:` as a YAML (block or flow) or JSON key, then its value, quoted or bare.
const IMAGE_KEY = /(?:^|[\s{,-])["']?image["']?[ \t]*:[ \t]*(?:"([^"\n]*)"|'([^'\n]*)'|([^\s,}#]*))/gm;
const BUILD_KEY = /(?:^|[\s{,-])["']?build["']?[ \t]*:/m;

/** The docker compose file inside dstack's app-compose JSON (`docker_compose_file`). */
export function dockerComposeOf(appCompose: string): string {
  const parsed = parseJsonAs("invalid_info", appCompose, "app_compose is not JSON");
  const file = (parsed as { docker_compose_file?: unknown } | null)?.docker_compose_file;
  if (typeof file !== "string") throw new AttestationError("invalid_info", "app_compose has no docker_compose_file");
  return file;
}

/**
 * Every `image:` value in a docker compose file, in order, and those not pinned by `@sha256:<64 hex>`.
 * Read by pattern, not by a YAML parser, and on the side of refusing: comment lines are skipped, an
 * `image:` anywhere else (even inside a string) counts, a value that is not on the key's line (a
 * block scalar, an anchor) counts as unpinned, and so does a `build:` (an image built at boot has no
 * digest anyone approved).
 */
export function composeImages(dockerCompose: string): { images: string[]; unpinned: string[] } {
  const text = dockerCompose
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("#"))
    .join("\n");
  const images: string[] = [];
  for (const match of text.matchAll(IMAGE_KEY)) images.push(match[1] ?? match[2] ?? match[3] ?? "");
  const unpinned = images
    .filter((image) => !PINNED.test(image))
    .map((image) => (image === "" ? "(image: without a value on its line)" : image));
  if (BUILD_KEY.test(text)) unpinned.push("(build: an image built at boot)");
  return { images, unpinned };
}

/**
 * Check 4: `/info` agrees with RTMR3 and pins its images. One result per fact:
 * `info.compose_hash` (the served hash = SHA-256 of the raw app_compose = the RTMR3 claim),
 * `info.app_id` and `info.instance_id` (equal to the claims), `info.images` (every image pinned).
 */
export function checkInfo(info: Info, claims: Rtmr3Claims): CheckResult[] {
  const results: CheckResult[] = [];
  const computed = composeHash(info.tcb_info.app_compose);
  const served = normalizeHex(info.compose_hash);
  if (computed !== claims.composeHash) {
    results.push(
      failed(
        "info.compose_hash",
        `SHA-256 of app_compose is ${computed}, but RTMR3 claims compose-hash ${claims.composeHash}`,
      ),
    );
  } else if (served !== computed) {
    results.push(
      failed("info.compose_hash", `/info says compose_hash ${served}, but SHA-256 of its app_compose is ${computed}`),
    );
  } else {
    results.push(passed("info.compose_hash", `compose_hash ${computed} = SHA-256(app_compose) = RTMR3 compose-hash`));
  }

  const appId = normalizeHex(info.app_id);
  results.push(
    appId === claims.appId
      ? passed("info.app_id", `app_id ${appId} = RTMR3 app-id`)
      : failed("info.app_id", `/info says app_id ${appId}, RTMR3 claims ${claims.appId}`),
  );
  const instanceId = normalizeHex(info.instance_id);
  results.push(
    instanceId === claims.instanceId
      ? passed(
          "info.instance_id",
          instanceId === "" ? "no instance id, as in RTMR3" : `instance_id ${instanceId} = RTMR3 instance-id`,
        )
      : failed(
          "info.instance_id",
          `/info says instance_id ${instanceId || "(none)"}, RTMR3 claims ${claims.instanceId || "(none)"}`,
        ),
  );

  try {
    const { images, unpinned } = composeImages(dockerComposeOf(info.tcb_info.app_compose));
    if (images.length === 0) results.push(failed("info.images", "the docker compose file names no image"));
    else if (unpinned.length > 0) results.push(failed("info.images", `not pinned by @sha256: ${unpinned.join(", ")}`));
    else results.push(passed("info.images", `${images.length} image(s), all pinned by @sha256`));
  } catch (err) {
    results.push(failed("info.images", (err as Error).message));
  }
  return results;
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}
