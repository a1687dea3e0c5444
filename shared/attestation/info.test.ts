// Check 4 (`/info`): the compose hash is SHA-256 of the raw app-compose text and equals the RTMR3
// claim, the ids match, and every image is pinned by digest.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AttestationError } from "./errors.ts";
import type { Rtmr3Claims } from "./eventLog.ts";
import { checkInfo, composeHash, composeImages, dockerComposeOf, parseInfo, type Info } from "./info.ts";

const DIGEST = "0123456789abcdef".repeat(4);
const COMPOSE = [
  "services:",
  "  sigil:",
  `    image: ghcr.io/sigil/enclave@sha256:${DIGEST}`,
  "    volumes:",
  "      - /var/run/dstack.sock:/var/run/dstack.sock",
  "  ingress:",
  `    image: "dstacktee/dstack-ingress:1.2@sha256:${DIGEST}"`,
  "",
].join("\n");
// dstack's app-compose: JSON with the compose file as a string; served and hashed byte for byte.
const APP_COMPOSE = JSON.stringify(
  { manifest_version: 2, name: "sigil", runner: "docker-compose", docker_compose_file: COMPOSE, kms_enabled: true },
  null,
  2,
);
const HASH = createHash("sha256").update(APP_COMPOSE, "utf8").digest("hex");
const APP_ID = HASH.slice(0, 40);
const INSTANCE_ID = "c3714eb66990eace777b4e664c16e09375dec4c9";

const claims: Rtmr3Claims = {
  appId: APP_ID,
  composeHash: HASH,
  instanceId: INSTANCE_ID,
  keyProvider: { name: "kms", raw: '{"name":"kms"}' },
};
const info = (overrides: Partial<Info> = {}, appCompose = APP_COMPOSE): Info => ({
  app_id: APP_ID,
  compose_hash: HASH,
  instance_id: INSTANCE_ID,
  tcb_info: { app_compose: appCompose },
  ...overrides,
});
const byCheck = (results: ReturnType<typeof checkInfo>) => Object.fromEntries(results.map((r) => [r.check, r]));

describe("parseInfo", () => {
  it("accepts tcb_info as an object or as dstack's JSON string, keeping app_compose raw", () => {
    const body = {
      app_id: APP_ID,
      compose_hash: HASH,
      instance_id: INSTANCE_ID,
      tcb_info: { app_compose: APP_COMPOSE, mrtd: "00" },
    };
    const asObject = parseInfo(JSON.stringify(body));
    const asString = parseInfo({ ...body, tcb_info: JSON.stringify(body.tcb_info) });
    expect(asObject.tcb_info.app_compose).toBe(APP_COMPOSE);
    expect(asString).toEqual(asObject);
    expect(asString.tcb_info.mrtd).toBe("00");
  });

  it("refuses what is not /info", () => {
    expect(() => parseInfo("{")).toThrow(new AttestationError("invalid_info", "/info is not valid JSON"));
    expect(() => parseInfo({ app_id: APP_ID, compose_hash: HASH, instance_id: "", tcb_info: "{x" })).toThrow(
      "/info tcb_info is a string but not JSON",
    );
    expect(() => parseInfo({ app_id: APP_ID, compose_hash: HASH, instance_id: "", tcb_info: {} })).toThrow(
      /^\/info tcb_info: app_compose: /,
    );
    expect(() => parseInfo({ compose_hash: HASH, instance_id: "", tcb_info: {} })).toThrow(/^\/info: app_id: /);
  });
});

describe("composeHash", () => {
  it("is SHA-256 of the text as served; re-serializing changes it", () => {
    expect(composeHash(APP_COMPOSE)).toBe(HASH);
    const reserialized = JSON.stringify(JSON.parse(APP_COMPOSE));
    expect(reserialized).not.toBe(APP_COMPOSE);
    expect(composeHash(reserialized)).not.toBe(HASH);
  });
});

describe("checkInfo", () => {
  it("passes when /info, its app_compose and RTMR3 agree and every image is pinned", () => {
    const results = checkInfo(info(), claims);
    expect(results.map((r) => [r.check, r.ok])).toEqual([
      ["info.compose_hash", true],
      ["info.app_id", true],
      ["info.instance_id", true],
      ["info.images", true],
    ]);
    expect(byCheck(results)["info.images"]!.detail).toBe("2 image(s), all pinned by @sha256");
    // 0x and upper case in /info are the same hex.
    expect(
      checkInfo(info({ compose_hash: `0x${HASH.toUpperCase()}`, app_id: `0x${APP_ID}` }), claims).every((r) => r.ok),
    ).toBe(true);
  });

  it("compose hash mismatch: app_compose is not what RTMR3 measured", () => {
    const other = { ...claims, composeHash: "ab".repeat(32) };
    expect(byCheck(checkInfo(info(), other))["info.compose_hash"]).toEqual({
      check: "info.compose_hash",
      ok: false,
      detail: `SHA-256 of app_compose is ${HASH}, but RTMR3 claims compose-hash ${"ab".repeat(32)}`,
    });
    // A re-serialized app_compose no longer hashes to the claim.
    const reserialized = JSON.stringify(JSON.parse(APP_COMPOSE));
    expect(byCheck(checkInfo(info({}, reserialized), claims))["info.compose_hash"]!.detail).toBe(
      `SHA-256 of app_compose is ${composeHash(reserialized)}, but RTMR3 claims compose-hash ${HASH}`,
    );
  });

  it("compose hash mismatch: /info's compose_hash is not its app_compose's", () => {
    expect(byCheck(checkInfo(info({ compose_hash: "cd".repeat(32) }), claims))["info.compose_hash"]!.detail).toBe(
      `/info says compose_hash ${"cd".repeat(32)}, but SHA-256 of its app_compose is ${HASH}`,
    );
  });

  it("app_id and instance_id must be RTMR3's", () => {
    const results = byCheck(checkInfo(info({ app_id: "00".repeat(20), instance_id: "" }), claims));
    expect(results["info.app_id"]).toMatchObject({
      ok: false,
      detail: `/info says app_id ${"00".repeat(20)}, RTMR3 claims ${APP_ID}`,
    });
    expect(results["info.instance_id"]).toMatchObject({
      ok: false,
      detail: `/info says instance_id (none), RTMR3 claims ${INSTANCE_ID}`,
    });
    expect(
      byCheck(checkInfo(info({ instance_id: "" }), { ...claims, instanceId: "" }))["info.instance_id"],
    ).toMatchObject({ ok: true, detail: "no instance id, as in RTMR3" });
  });

  it("an unpinned image fails, naming it", () => {
    const compose = COMPOSE.replace(`ghcr.io/sigil/enclave@sha256:${DIGEST}`, "ghcr.io/sigil/enclave:latest");
    const appCompose = JSON.stringify({ docker_compose_file: compose });
    const results = byCheck(
      checkInfo(info({ compose_hash: composeHash(appCompose) }, appCompose), {
        ...claims,
        composeHash: composeHash(appCompose),
      }),
    );
    expect(results["info.compose_hash"]!.ok).toBe(true);
    expect(results["info.images"]).toEqual({
      check: "info.images",
      ok: false,
      detail: "not pinned by @sha256: ghcr.io/sigil/enclave:latest",
    });
  });

  it("an app_compose without a docker compose file or without images fails", () => {
    const noFile = JSON.stringify({ runner: "bash" });
    expect(byCheck(checkInfo(info({}, noFile), claims))["info.images"]!.detail).toBe(
      "app_compose has no docker_compose_file",
    );
    const noImage = JSON.stringify({ docker_compose_file: "services: {}\n" });
    expect(byCheck(checkInfo(info({}, noImage), claims))["info.images"]!.detail).toBe(
      "the docker compose file names no image",
    );
    expect(() => dockerComposeOf("not json")).toThrow("app_compose is not JSON");
  });
});

describe("composeImages", () => {
  const pinned = `nginx@sha256:${DIGEST}`;
  it("finds images in block, flow and JSON form, quoted or not", () => {
    const text = [
      "services:",
      `  a: { image: ${pinned}, restart: always }`,
      `  b:`,
      `    image: 'redis:7@sha256:${DIGEST}'   # pinned`,
      `  c: {"image": "alpine:3"}`,
      `  d:`,
      `    "image":busybox`,
    ].join("\n");
    expect(composeImages(text)).toEqual({
      images: [pinned, `redis:7@sha256:${DIGEST}`, "alpine:3", "busybox"],
      unpinned: ["alpine:3", "busybox"],
    });
  });

  it("skips comment lines; counts a value off the key's line and a build: as unpinned", () => {
    const text = [
      "services:",
      "  a:",
      "    # image: nginx:latest",
      `    image: ${pinned}`,
      "  b:",
      "    image: >-",
      "      nginx:latest",
      "  c:",
      "    build: .",
    ].join("\n");
    expect(composeImages(text)).toEqual({
      images: [pinned, ">-"],
      unpinned: [">-", "(build: an image built at boot)"],
    });
    expect(composeImages("services:\n  a:\n    image:\n      nginx").unpinned).toEqual([
      "(image: without a value on its line)",
    ]);
  });

  it("a digest must be 64 lowercase hex digits at the end", () => {
    expect(composeImages(`image: nginx@sha256:${DIGEST.slice(1)}`).unpinned).toHaveLength(1);
    expect(composeImages(`image: nginx@sha256:${DIGEST.toUpperCase()}`).unpinned).toHaveLength(1);
    expect(composeImages(`image: nginx@sha256:${DIGEST}`).unpinned).toHaveLength(0);
  });
});
