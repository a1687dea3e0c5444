import { getComposeHash } from "@phala/dstack-sdk/get-compose-hash";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import {
  APP_COMPOSE_SETTINGS,
  DEV_APP_COMPOSE_PATH,
  ReleaseError,
  TEMPLATE_PATH,
  checkCompose,
  devAppComposeText,
  main,
  renderCompose,
  writeRelease,
  type ReleaseInput,
} from "./release.ts";

/** An edge identity as the release takes it (43 base64url characters). */
const EDGE_KEY = "q3XYuCGk0eRGZ3FRQC_vLmDV82i5bLNjLW3Cv5pMhWE";

const template = readFileSync(TEMPLATE_PATH, "utf8");
const ENCLAVE = `sha256:${"a1".repeat(32)}`;
const INGRESS = `sha256:${"b2".repeat(32)}`;
const input = (over: Partial<ReleaseInput> = {}): ReleaseInput => ({
  images: { enclave: ENCLAVE, ingress: INGRESS, ...over.images },
  values: {
    SIGIL_RPC_URL: "https://mainnet.base.org",
    SIGIL_CONTRACT_ADDRESS: "0x1111111111111111111111111111111111111111",
    SIGIL_RECEIPT_ANCHOR: "0x2222222222222222222222222222222222222222",
    SIGIL_ALLOWED_EDGE_KEYS: EDGE_KEY,
    ...over.values,
  },
});
const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

const dirs: string[] = [];
function outDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "sigil-release-"));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Runs the command as an operator would; returns its status and output. */
function run(args: string[]): { status: number; out: string; err: string } {
  const out: string[] = [];
  const err: string[] = [];
  const status = main(
    args,
    (l) => out.push(l),
    (l) => err.push(l),
  );
  return { status, out: out.join("\n"), err: err.join("\n") };
}

describe("release: the compose", () => {
  it("fills every digest and value and pins every image by @sha256", () => {
    const compose = renderCompose(template, input());
    const doc = parseYaml(compose) as {
      services: Record<string, { image: string; environment: Record<string, string> }>;
    };
    expect(doc.services.enclave?.image).toBe(`ghcr.io/sigil-dev/sigil-enclave@${ENCLAVE}`);
    expect(doc.services.ingress?.image).toBe(`docker.io/dstacktee/dstack-ingress@${INGRESS}`);
    expect(doc.services.enclave?.environment).toMatchObject({
      SIGIL_ENV: "production",
      SIGIL_ROOT_KEY_PROVIDER: "dstack",
      SIGIL_RPC_URL: "https://mainnet.base.org",
      SIGIL_CONTRACT_ADDRESS: "0x1111111111111111111111111111111111111111",
      SIGIL_RECEIPT_ANCHOR: "0x2222222222222222222222222222222222222222",
      SIGIL_ALLOWED_EDGE_KEYS: EDGE_KEY,
    });
    expect(compose).not.toMatch(/\{\{|\}\}|^\s*##/m);
  });

  it("keeps the enclave settings config.ts reads, the dstack socket and the ingress that serves /evidences/", () => {
    const doc = parseYaml(renderCompose(template, input())) as {
      services: Record<string, { environment: Record<string, string>; volumes: string[]; ports?: string[] }>;
    };
    const enclave = doc.services.enclave;
    const ingress = doc.services.ingress;
    expect(Object.keys(enclave?.environment ?? {})).toEqual(
      expect.arrayContaining([
        "SIGIL_ALLOWED_EDGE_KEYS",
        "SIGIL_INSTANCE_INDEX",
        "SIGIL_PAYERS_PER_INSTANCE",
        "SIGIL_ENCLAVE_HOST",
        "SIGIL_ENCLAVE_PORT",
      ]),
    );
    expect(enclave?.volumes).toContain("/var/run/dstack.sock:/var/run/dstack.sock");
    expect(enclave?.ports).toBeUndefined();
    expect(ingress?.environment).toMatchObject({
      TARGET_ENDPOINT: `enclave:${enclave?.environment.SIGIL_ENCLAVE_PORT}`,
      EVIDENCE_SERVER: "true",
    });
    expect(ingress?.volumes).toContain("/var/run/dstack.sock:/var/run/dstack.sock");
    expect(ingress?.ports).toEqual(["443:443"]);
  });

  it.each([
    ["too short", "sha256:abc"],
    ["upper-case hex", `sha256:${"AB".repeat(32)}`],
    ["another algorithm", `sha512:${"ab".repeat(32)}`],
    ["no algorithm", "ab".repeat(32)],
    ["a tag", "latest"],
    ["a reference", `ghcr.io/x/y@sha256:${"ab".repeat(32)}`],
    ["the dev zero digest", `sha256:${"0".repeat(64)}`],
  ])("refuses a digest that is %s", (_, digest) => {
    const dir = outDir();
    const result = run([
      "--image",
      `enclave=${digest}`,
      "--image",
      `ingress=${INGRESS}`,
      "--set",
      "SIGIL_RPC_URL=https://mainnet.base.org",
      "--set",
      "SIGIL_CONTRACT_ADDRESS=0x1111111111111111111111111111111111111111",
      "--set",
      "SIGIL_RECEIPT_ANCHOR=0x2222222222222222222222222222222222222222",
      "--set",
      `SIGIL_ALLOWED_EDGE_KEYS=${EDGE_KEY}`,
      "--out-dir",
      dir,
    ]);
    expect(result.status).toBe(2);
    expect(result.err).toMatch(/--image enclave/);
    expect(() => readFileSync(join(dir, "app-compose.json"))).toThrow();
  });

  it("refuses a missing image, an image the template does not have, and a value given twice", () => {
    expect(() =>
      writeRelease({ dev: false, outDir: outDir(), input: { images: { enclave: ENCLAVE }, values: input().values } }),
    ).toThrow(/--image ingress=/);
    expect(() =>
      writeRelease({
        dev: false,
        outDir: outDir(),
        input: input({ images: { enclave: ENCLAVE, ingress: INGRESS, web: ENCLAVE } }),
      }),
    ).toThrow(/no image called "web"/);
    expect(run(["--image", `enclave=${ENCLAVE}`, "--image", `enclave=${ENCLAVE}`]).err).toMatch(
      /--image enclave given twice/,
    );
  });

  it.each([
    ["a missing value", { SIGIL_RPC_URL: undefined }, /--set SIGIL_RPC_URL=/],
    ["an http RPC URL", { SIGIL_RPC_URL: "http://mainnet.base.org" }, /https/],
    ["credentials in the RPC URL", { SIGIL_RPC_URL: "https://user:key@rpc.example" }, /credentials/],
    ["a malformed address", { SIGIL_CONTRACT_ADDRESS: "0x1234" }, /address/],
    ["the zero address", { SIGIL_CONTRACT_ADDRESS: `0x${"0".repeat(40)}` }, /zero address/],
    ["an edge key that is not an Ed25519 public key", { SIGIL_ALLOWED_EDGE_KEYS: "abcd" }, /Ed25519/],
    ["a value that would break the YAML", { SIGIL_RPC_URL: 'https://x"\n  evil: 1' }, /quotes/],
    ["a value compose would interpolate", { SIGIL_RPC_URL: "https://x/$HOME" }, /\$/],
    ["a value the template has no place for", { SIGIL_EXTRA: "1" }, /no \{\{SIGIL_EXTRA\}\}/],
  ])("refuses %s", (_, values, message) => {
    const given = Object.fromEntries(
      Object.entries({ ...input().values, ...values }).filter(([, v]) => v !== undefined),
    ) as Record<string, string>;
    expect(() =>
      writeRelease({ dev: false, outDir: outDir(), input: { images: input().images, values: given } }),
    ).toThrow(message);
  });

  it.each([
    ["a floating tag", "services:\n  web:\n    image: nginx:latest\n"],
    ["no tag at all", "services:\n  web:\n    image: nginx\n"],
    ["a quoted tag", 'services:\n  web:\n    image: "nginx:1.27"\n'],
    ["a tag beside a placeholder left unfilled", "services:\n  web:\n    image: nginx@{{image:web}}\n"],
    ["a short digest", "services:\n  web:\n    image: nginx@sha256:abcd\n"],
  ])("refuses an image pinned by %s", (_, compose) => {
    expect(() => checkCompose(compose, [])).toThrow(ReleaseError);
  });

  it("refuses build:, an unlisted ${VAR}, a stray $ and an allowed env the compose never uses", () => {
    const pinned = `services:\n  web:\n    image: nginx@sha256:${"c3".repeat(32)}\n`;
    expect(() => checkCompose(pinned, [])).not.toThrow();
    expect(() => checkCompose(`${pinned}    build: .\n`, [])).toThrow(/build/);
    expect(() => checkCompose(`${pinned}    environment:\n      A: "\${SECRET}"\n`, [])).toThrow(
      /SECRET.*allowed_envs/,
    );
    expect(() => checkCompose(`${pinned}    environment:\n      A: "cost: $5"\n`, [])).toThrow(/\$\$/);
    expect(() => checkCompose(`${pinned}    environment:\n      A: "cost: $$5"\n`, [])).not.toThrow();
    expect(() => checkCompose(pinned, ["DOMAIN"])).toThrow(/DOMAIN, which the compose never uses/);
    // Comments are not interpolated, so a "$" in one is fine.
    expect(() => checkCompose(`# the \${…} values\n${pinned}`, [])).not.toThrow();
  });

  it("leaves exactly the allowed envs for dstack to fill at boot", () => {
    const compose = renderCompose(template, input());
    const names = [
      ...compose
        .split("\n")
        .filter((l) => !/^\s*#/.test(l))
        .join("\n")
        .matchAll(/\$\{([A-Z_]+)/g),
    ].map((m) => m[1]);
    expect([...new Set(names)].sort()).toEqual([...APP_COMPOSE_SETTINGS.allowed_envs].sort());
  });
});

describe("release: app-compose.json and the compose hash", () => {
  it("writes the compose and app-compose.json, and prints the SHA-256 of the written bytes", () => {
    const dir = outDir();
    const result = run([
      "--image",
      `enclave=${ENCLAVE}`,
      "--image",
      `ingress=${INGRESS}`,
      "--set",
      "SIGIL_RPC_URL=https://mainnet.base.org",
      "--set",
      "SIGIL_CONTRACT_ADDRESS=0x1111111111111111111111111111111111111111",
      "--set",
      "SIGIL_RECEIPT_ANCHOR=0x2222222222222222222222222222222222222222",
      "--set",
      `SIGIL_ALLOWED_EDGE_KEYS=${EDGE_KEY}`,
      "--out-dir",
      dir,
    ]);
    expect(result.status).toBe(0);
    const bytes = readFileSync(join(dir, "app-compose.json"));
    const hash = sha256(bytes);
    expect(result.out).toContain(`compose hash: ${hash}`);
    expect(result.out).toContain("app-compose.json");
    expect(result.out).toContain(`addComposeHash(0x${hash})`);
    expect(result.out).toContain(`--expect-compose-hash ${hash}`);
    const appCompose = JSON.parse(bytes.toString("utf8")) as Record<string, unknown>;
    expect(appCompose.docker_compose_file).toBe(readFileSync(join(dir, "docker-compose.yml"), "utf8"));
    expect(appCompose).toMatchObject({
      manifest_version: 2,
      runner: "docker-compose",
      kms_enabled: true,
      gateway_enabled: true,
      local_key_provider_enabled: false,
      public_tcbinfo: true,
    });
  });

  it("writes dstack's canonical JSON: the SDK's getComposeHash of the parsed file is the hash of its bytes", () => {
    const dir = outDir();
    const { appComposePath, composeHash } = writeRelease({ dev: false, outDir: dir, input: input() });
    const text = readFileSync(appComposePath, "utf8");
    expect(getComposeHash(JSON.parse(text) as never)).toBe(composeHash);
    expect(text.endsWith("}")).toBe(true);
  });

  it("is deterministic: the same inputs give the same bytes and hash, another digest another hash", () => {
    const first = writeRelease({ dev: false, outDir: outDir(), input: input() });
    const second = writeRelease({ dev: false, outDir: outDir(), input: input() });
    expect(second.composeHash).toBe(first.composeHash);
    expect(readFileSync(second.appComposePath)).toEqual(readFileSync(first.appComposePath));
    const other = writeRelease({
      dev: false,
      outDir: outDir(),
      input: input({ images: { enclave: `sha256:${"a2".repeat(32)}` } }),
    });
    expect(other.composeHash).not.toBe(first.composeHash);
  });
});

describe("release --dev", () => {
  it("the committed deploy/app-compose.dev.json is what --dev generates from the template (run `node deploy/release.ts --dev`)", () => {
    expect(readFileSync(DEV_APP_COMPOSE_PATH, "utf8")).toBe(devAppComposeText(template));
  });

  it("uses zero digests and passes the same checks as a release", () => {
    const dir = outDir();
    const result = run(["--dev", "--out-dir", dir]);
    expect(result.status).toBe(0);
    const bytes = readFileSync(join(dir, "app-compose.dev.json"));
    expect(result.out).toContain(`compose hash: ${sha256(bytes)}`);
    const { docker_compose_file: compose } = JSON.parse(bytes.toString("utf8")) as { docker_compose_file: string };
    expect(compose.match(/@sha256:0{64}$/gm)).toHaveLength(2);
    expect(() => checkCompose(compose, APP_COMPOSE_SETTINGS.allowed_envs)).not.toThrow();
    expect(run(["--dev", "--image", `enclave=${ENCLAVE}`]).status).toBe(2);
  });

  it("runs as a command: node deploy/release.ts --dev", () => {
    const dir = outDir();
    const child = spawnSync(process.execPath, [join(import.meta.dirname, "release.ts"), "--dev", "--out-dir", dir], {
      encoding: "utf8",
    });
    expect(child.status).toBe(0);
    expect(child.stdout).toContain(`compose hash: ${sha256(readFileSync(join(dir, "app-compose.dev.json")))}`);
    const refused = spawnSync(
      process.execPath,
      [join(import.meta.dirname, "release.ts"), "--image", "enclave=latest"],
      { encoding: "utf8" },
    );
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/not a digest/);
  });
});
