// Turns deploy/docker-compose.template.yml into what dstack runs and what the chain allows:
// deploy/docker-compose.yml and deploy/app-compose.json, whose SHA-256 (of the file's exact bytes)
// is the compose hash that the CVM measures into RTMR3 and that the app's governance contract
// must list in allowedComposeHashes (docs/design/attestation.md). README, "Deploying", is the walk-through.
//
//   node deploy/release.ts --image enclave=sha256:<64 hex> --image ingress=sha256:<64 hex> \
//     --set SIGIL_RPC_URL=https://mainnet.base.org --set SIGIL_CONTRACT_ADDRESS=0x… --set SIGIL_RECEIPT_ANCHOR=0x…
//   node deploy/release.ts --dev      # deploy/app-compose.dev.json: zero digests, dev values
//
// The two production files are committed with the release, so the repository at a release tag
// holds exactly the text a verifier reads back from `/info`. The dev file is always committed:
// the simulated TEE replays its compose hash into RTMR3, and a unit test fails if it drifts from
// the template.
//
// app-compose.json is written in the canonical form dstack's tooling hashes (keys sorted at every
// level, no whitespace, no final newline: @phala/dstack-sdk's getComposeHash), so the hash printed
// here is the one the CVM measures whether the file goes to dstack-vmm as is or is re-serialized
// by a deployment service. Nothing here needs docker or the network.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const deployDir = dirname(fileURLToPath(import.meta.url));
export const TEMPLATE_PATH = join(deployDir, "docker-compose.template.yml");
export const DEV_APP_COMPOSE_PATH = join(deployDir, "app-compose.dev.json");

/**
 * Everything in app-compose.json besides the compose text (dstack's `AppCompose`). Each field is
 * part of the compose hash, so a change here is a new release.
 */
export const APP_COMPOSE_SETTINGS = {
  manifest_version: 2,
  name: "sigil",
  runner: "docker-compose",
  // The root key comes from the KMS, which releases it only to CVMs of this app whose compose
  // hash the app's contract allows; never from a key kept on the host.
  kms_enabled: true,
  local_key_provider_enabled: false,
  // Reached through the dstack gateway, which passes TLS through to dstack-ingress.
  gateway_enabled: true,
  // `/info` must carry tcb_info.app_compose for verifiers (check 4); system info is harmless.
  public_tcbinfo: true,
  public_sysinfo: true,
  // Logs name accounts and requests: kept private.
  public_logs: false,
  // Each CVM gets its own instance id (an RTMR3 event), which tells instances apart.
  no_instance_id: false,
  // Containers start only once the clock is trusted: TLS and the channel's ±60 s window need it.
  secure_time: true,
  // The only names the operator's encrypted environment may set, each used as ${NAME} in the
  // compose: per-instance routing and secrets, none of which decides who may use a key.
  allowed_envs: ["CLOUDFLARE_API_TOKEN", "DOMAIN", "GATEWAY_DOMAIN", "SIGIL_INSTANCE_INDEX"],
} as const;

/** The `{{NAME}}` values a release is given with `--set`, each with its check and its --dev value. */
export const RELEASE_VALUES: Record<
  string,
  { dev: string; describe: string; problem(value: string): string | undefined }
> = {
  SIGIL_RPC_URL: {
    dev: "http://127.0.0.1:8545",
    describe: "the Base JSON-RPC URL the enclave reads permissions from (public: no API key in it)",
    problem(value) {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        return "is not a URL";
      }
      if (url.protocol !== "https:") return "must be an https:// URL";
      if (url.username || url.password) return "must not carry credentials: the compose is public";
      return undefined;
    },
  },
  SIGIL_ALLOWED_EDGE_KEYS: {
    // The public key of the seed `npm start` and the tests do not use: a fixed, documented dev value.
    dev: "0000000000000000000000000000000000000000000",
    describe: "the edges' Ed25519 public keys (base64url or hex), comma-separated: only they may call the internal API",
    problem(value) {
      const keys = value.split(",");
      if (!keys.every((k) => /^([A-Za-z0-9_-]{43}|[0-9a-fA-F]{64})$/.test(k)))
        return "must be Ed25519 public keys, 43 base64url characters or 64 hex digits, comma-separated";
      return undefined;
    },
  },
  SIGIL_CONTRACT_ADDRESS: {
    dev: "0x0000000000000000000000000000000000000000",
    describe: "AccountConfig's proxy address on that chain",
    problem: nonZeroAddress,
  },
  SIGIL_RECEIPT_ANCHOR: {
    dev: "0x0000000000000000000000000000000000000000",
    describe: "the ReceiptAnchor contract on that chain, where the instances anchor their receipts",
    problem: nonZeroAddress,
  },
};

function nonZeroAddress(value: string): string | undefined {
  if (!/^0x[0-9a-fA-F]{40}$/.test(value)) return "must be a 0x-prefixed 20-byte address";
  if (/^0x0{40}$/.test(value)) return "must not be the zero address";
  return undefined;
}

/** A digest as a release takes it: `sha256:` and 64 lowercase hex digits, as registries print it. */
const DIGEST = /^sha256:[0-9a-f]{64}$/;
const ZERO_DIGEST = `sha256:${"0".repeat(64)}`;
/** What a `--set` value may contain: it lands inside a double-quoted YAML string that compose interpolates. */
const SAFE_VALUE = /^[^\s"'\\$`{}]{1,2048}$/;

export class ReleaseError extends Error {
  override readonly name = "ReleaseError";
}

export type ReleaseInput = {
  /** Image name in the template (`{{image:NAME}}`) → `sha256:<64 hex>`. */
  images: Record<string, string>;
  /** Release value name (`{{NAME}}`) → value. */
  values: Record<string, string>;
};

/** The input `--dev` uses: every digest zero, every release value its dev default. */
export function devInput(template: string): ReleaseInput {
  const images: Record<string, string> = {};
  const values: Record<string, string> = {};
  for (const token of placeholders(template)) {
    if (token.startsWith("image:")) {
      images[token.slice("image:".length)] = ZERO_DIGEST;
    } else {
      const known = RELEASE_VALUES[token];
      if (!known)
        throw new ReleaseError(
          `the template's {{${token}}} has no dev value: add it to RELEASE_VALUES in deploy/release.ts`,
        );
      values[token] = known.dev;
    }
  }
  return { images, values };
}

/** The template without its `##` notes, which are for its editors and never deployed. */
function withoutNotes(template: string): string {
  return template
    .split("\n")
    .filter((line) => !/^\s*##/.test(line))
    .join("\n");
}

/** The `{{…}}` tokens of a template, notes left out, each once, in order. */
export function placeholders(template: string): string[] {
  return [...new Set([...withoutNotes(template).matchAll(/\{\{([^{}]*)\}\}/g)].map((m) => m[1] ?? ""))];
}

/** Checks a release's digests and values; zero digests and dev values are refused unless `dev`. */
export function checkInput(input: ReleaseInput, { dev = false } = {}): void {
  for (const [name, digest] of Object.entries(input.images)) {
    if (!DIGEST.test(digest))
      throw new ReleaseError(
        `--image ${name}: "${digest}" is not a digest: give sha256: and 64 lowercase hex digits (the registry's digest, never a tag)`,
      );
    if (!dev && digest === ZERO_DIGEST)
      throw new ReleaseError(`--image ${name}: the zero digest is the dev placeholder, not an image`);
  }
  for (const [name, value] of Object.entries(input.values)) {
    if (!SAFE_VALUE.test(value))
      throw new ReleaseError(
        `--set ${name}: the value must be 1–2048 characters without spaces, quotes, backslashes, $, \` or braces`,
      );
    const problem = dev ? undefined : RELEASE_VALUES[name]?.problem(value);
    if (problem) throw new ReleaseError(`--set ${name}: ${problem}`);
  }
}

/**
 * Fills the template: every `{{…}}` replaced, the `##` notes dropped, then checked as dstack will
 * run it (checkCompose). Every placeholder needs a value and every value a placeholder.
 */
export function renderCompose(template: string, input: ReleaseInput): string {
  const used = new Set<string>();
  const filled = withoutNotes(template).replace(/\{\{([^{}]*)\}\}/g, (_, token: string) => {
    used.add(token);
    const value = token.startsWith("image:") ? input.images[token.slice("image:".length)] : input.values[token];
    if (value === undefined) {
      throw new ReleaseError(
        token.startsWith("image:")
          ? `the template needs --image ${token.slice("image:".length)}=sha256:<64 hex>`
          : `the template needs --set ${token}=<${RELEASE_VALUES[token]?.describe ?? "value"}>`,
      );
    }
    return value;
  });
  for (const name of Object.keys(input.images)) {
    if (!used.has(`image:${name}`))
      throw new ReleaseError(`--image ${name}: the template has no image called "${name}"`);
  }
  for (const name of Object.keys(input.values)) {
    if (!used.has(name)) throw new ReleaseError(`--set ${name}: the template has no {{${name}}}`);
  }
  const compose = `${filled.replace(/^\n+/, "").trimEnd()}\n`;
  checkCompose(compose, APP_COMPOSE_SETTINGS.allowed_envs);
  return compose;
}

/**
 * What a deployable compose must be: no placeholder left, every `image:` pinned by `@sha256:`
 * (verifier check 4), nothing built inside the CVM, and every `${NAME}` interpolation one of the
 * allowed envs (anything else would be an unmeasured value nobody can set), each of them used.
 */
export function checkCompose(compose: string, allowedEnvs: readonly string[]): void {
  const left = /\{\{[^{}]*\}\}/.exec(compose);
  if (left) throw new ReleaseError(`placeholder ${left[0]} left in the compose`);
  const lines = compose.split("\n");
  let images = 0;
  lines.forEach((line, i) => {
    if (/^\s*#/.test(line)) return;
    const image = /^\s*(?:-\s+)?["']?image["']?\s*:\s*(.*?)\s*(?:\s#.*)?$/.exec(line);
    if (image) {
      images += 1;
      const ref = (image[1] ?? "").replace(/^(["'])(.*)\1$/, "$2");
      if (!/^[^\s@]+@sha256:[0-9a-f]{64}$/.test(ref))
        throw new ReleaseError(`line ${i + 1}: image "${ref}" is not pinned by @sha256:<64 hex>`);
    }
    if (/^\s*(?:-\s+)?["']?build["']?\s*:/.test(line))
      throw new ReleaseError(`line ${i + 1}: "build:" is refused: a CVM runs only images pinned by digest`);
  });
  if (images === 0) throw new ReleaseError("the compose names no image");
  // Compose interpolates values, not comments: only lines that are not comments are read.
  const code = lines.filter((line) => !/^\s*#/.test(line)).join("\n");
  const referenced = new Set<string>();
  for (const match of code
    .replace(/\$\$/g, "")
    .matchAll(/\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)|(.?))/g)) {
    const name = match[1] ?? match[2];
    if (name === undefined)
      throw new ReleaseError(`a "$" that is not an interpolation (write $$ for a literal $): "$${match[3] ?? ""}"`);
    if (!allowedEnvs.includes(name))
      throw new ReleaseError(
        `\${${name}} is not in allowed_envs: nothing would set it at boot (a fixed value belongs in the compose, literally)`,
      );
    referenced.add(name);
  }
  const unused = allowedEnvs.filter((name) => !referenced.has(name));
  if (unused.length > 0)
    throw new ReleaseError(`allowed_envs lists ${unused.join(", ")}, which the compose never uses`);
}

/**
 * app-compose.json's exact text: the settings and the compose, in dstack's canonical JSON
 * (release.test.ts checks that it hashes as @phala/dstack-sdk's getComposeHash hashes the settings).
 */
export function appComposeText(compose: string): string {
  return canonicalJson({
    ...APP_COMPOSE_SETTINGS,
    allowed_envs: [...APP_COMPOSE_SETTINGS.allowed_envs],
    docker_compose_file: compose,
  });
}

/**
 * Keys sorted at every level, no whitespace: what getComposeHash serializes before hashing. Written
 * here because the SDK gives only the hash, and the file dstack measures must be this exact text.
 */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/** The compose hash: hex SHA-256 of app-compose.json's bytes, as dstack measures it. */
export function composeHash(bytes: Uint8Array | string): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** deploy/app-compose.dev.json's text, generated from the template the way `--dev` does. */
export function devAppComposeText(template: string = readFileSync(TEMPLATE_PATH, "utf8")): string {
  const input = devInput(template);
  checkInput(input, { dev: true });
  return appComposeText(renderCompose(template, input));
}

export type ReleaseResult = { composePath: string | undefined; appComposePath: string; composeHash: string };

/** Writes the release's files into `outDir` and hashes app-compose.json as written. */
export function writeRelease({
  dev,
  input,
  outDir = deployDir,
  template = readFileSync(TEMPLATE_PATH, "utf8"),
}: {
  dev: boolean;
  input?: ReleaseInput;
  outDir?: string;
  template?: string;
}): ReleaseResult {
  mkdirSync(outDir, { recursive: true });
  if (dev) {
    const appComposePath = join(outDir, "app-compose.dev.json");
    writeFileSync(appComposePath, devAppComposeText(template));
    return { composePath: undefined, appComposePath, composeHash: composeHash(readFileSync(appComposePath)) };
  }
  if (!input) throw new ReleaseError("a release needs its image digests and values");
  checkInput(input);
  const compose = renderCompose(template, input);
  const composePath = join(outDir, "docker-compose.yml");
  const appComposePath = join(outDir, "app-compose.json");
  writeFileSync(composePath, compose);
  writeFileSync(appComposePath, appComposeText(compose));
  // Hash what is on disk, not what was meant to be: that file is what the operator deploys.
  return { composePath, appComposePath, composeHash: composeHash(readFileSync(appComposePath)) };
}

const usage = `usage:
  node deploy/release.ts --image enclave=sha256:<64 hex> --image ingress=sha256:<64 hex> \\
    --set SIGIL_RPC_URL=<url> --set SIGIL_CONTRACT_ADDRESS=<0x…> --set SIGIL_RECEIPT_ANCHOR=<0x…> [--out-dir deploy/]
  node deploy/release.ts --dev [--out-dir deploy/]

Release values (--set NAME=value):
${Object.entries(RELEASE_VALUES)
  .map(([name, v]) => `  ${name}  ${v.describe}`)
  .join("\n")}
`;

function pairs(flag: string, list: string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of list ?? []) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new ReleaseError(`${flag} ${item}: expected NAME=value`);
    const name = item.slice(0, eq);
    if (name in out) throw new ReleaseError(`${flag} ${name} given twice`);
    out[name] = item.slice(eq + 1);
  }
  return out;
}

/** The command: returns the exit status (0 written, 2 refused), printing what to do next. */
export function main(
  argv: string[],
  out: (line: string) => void = console.log,
  err: (line: string) => void = console.error,
): number {
  try {
    const { values: flags } = parseArgs({
      args: argv,
      options: {
        image: { type: "string", multiple: true },
        set: { type: "string", multiple: true },
        dev: { type: "boolean", default: false },
        "out-dir": { type: "string" },
        help: { type: "boolean", default: false },
      },
      strict: true,
      allowPositionals: false,
    });
    if (flags.help) {
      out(usage);
      return 0;
    }
    const outDir = flags["out-dir"] ?? deployDir;
    const show = (path: string) => relative(process.cwd(), path) || path;
    if (flags.dev) {
      if (flags.image || flags.set)
        throw new ReleaseError("--dev takes no --image or --set: the dev file comes from the template alone");
      const result = writeRelease({ dev: true, outDir });
      out(`wrote ${show(result.appComposePath)} (zero digests, dev values; the simulated TEE replays this hash)`);
      out(`compose hash: ${result.composeHash}`);
      return 0;
    }
    const input = { images: pairs("--image", flags.image), values: pairs("--set", flags.set) };
    const result = writeRelease({ dev: false, input, outDir });
    const hash = result.composeHash;
    out(`wrote ${show(result.composePath ?? "")}`);
    out(`wrote ${show(result.appComposePath)}`);
    out(`compose hash: ${hash}`);
    out(`app-compose:  ${show(result.appComposePath)}`);
    out("");
    out("Next:");
    out(`  1. Commit both files with the release: they are exactly what verifiers read back from /info.`);
    out(
      `  2. Allow the hash on the app's governance contract (the DstackApp whose address is the app id), from its owner:`,
    );
    out(`       addComposeHash(0x${hash})   then allowedComposeHashes(0x${hash}) must return true`);
    out(`     The KMS gives the root key only to CVMs whose compose hash is allowed there.`);
    out(`  3. Deploy (or upgrade) each CVM with ${show(result.appComposePath)} byte for byte, and its encrypted`);
    out(
      `     environment: ${APP_COMPOSE_SETTINGS.allowed_envs.join(", ")} (SIGIL_INSTANCE_INDEX and DOMAIN differ per instance).`,
    );
    out(
      `  4. In wrangler.toml's [env.production.vars], list each instance's https://<DOMAIN> in SIGIL_ENCLAVE_URLS and`,
    );
    out(`     this hash in SIGIL_ALLOWED_COMPOSE_HASHES, then \`npx wrangler deploy --env production\`.`);
    out(`  5. Check each instance: sigil verify https://<DOMAIN> --expect-compose-hash ${hash}`);
    return 0;
  } catch (e) {
    if (
      e instanceof ReleaseError ||
      (e instanceof TypeError && "code" in e && String(e.code).startsWith("ERR_PARSE_ARGS"))
    ) {
      err(`release: ${e.message}`);
      err(usage);
      return 2;
    }
    throw e;
  }
}

if (import.meta.main) process.exitCode = main(process.argv.slice(2));
