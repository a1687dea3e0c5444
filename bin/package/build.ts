// The `sigil` command as a package of its own (`npm run pack` → dist/packages/sigil-cli-<version>.tgz),
// for `npm i -g` or `npx` outside this repository: bin/sigil.ts and everything it imports (the SDK,
// shared/, viem, zod) bundled by esbuild into ES modules for Node 20 and later (sigil.js, and chunks/
// loaded as each command is), so the package has no dependencies and nothing is fetched at install.
// `sigil start` is left out: the local stack (anvil, workerd, the enclave, the contracts) runs from a
// clone of the repository, and the packed command says so. The staging folder dist/packages/cli/ is
// made afresh each time.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { build, type Plugin } from "esbuild";

const root = join(import.meta.dirname, "../..");
const staging = join(root, "dist/packages/cli");
const { version } = JSON.parse(readFileSync(join(root, "bin/package.json"), "utf8")) as { version: string };

/** The oldest Node the packed command runs on (tested from a fresh folder with the system Node). */
export const CLI_NODE_RANGE = ">=20";

/** `sigil start` in the package: the stack is the repository's, so it says where to run it. */
const noLocalStack: Plugin = {
  name: "no-local-stack",
  setup(b) {
    b.onResolve({ filter: /\/stack\/start\.ts$/ }, () => ({ path: "start", namespace: "no-local-stack" }));
    b.onLoad({ filter: /.*/, namespace: "no-local-stack" }, () => ({
      contents: `export async function startLocalStack() {
  console.error("sigil start: the local stack runs from a clone of the Sigil repository (npm ci && npm start there); this installed sigil talks to a running service: --api URL, SIGIL_API_URL or a profile");
  return 2;
}`,
      loader: "js",
    }));
  },
};

export async function buildCliPackage(): Promise<string> {
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  await build({
    entryPoints: { sigil: join(root, "bin/sigil.ts") },
    outdir: staging,
    // Each command's code in chunks/, loaded when the command is (bin/sigil.ts imports them so):
    // `sigil --version` or a command's --help reads only the little it needs.
    splitting: true,
    chunkNames: "chunks/[name]-[hash]",
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    minifySyntax: true,
    legalComments: "linked",
    define: { SIGIL_CLI_VERSION: JSON.stringify(version) },
    // A bundled CommonJS dependency that calls require() finds Node's through this.
    banner: {
      // The shebang is bin/sigil.ts's own, which esbuild keeps first.
      js: `import { createRequire as __sigilCreateRequire } from "node:module";\nconst require = __sigilCreateRequire(import.meta.url);`,
    },
    plugins: [noLocalStack],
    logLevel: "warning",
  });
  writeFileSync(
    join(staging, "package.json"),
    `${JSON.stringify(
      {
        name: "@sigil/cli",
        version,
        description:
          "The sigil command: accounts, keys, wallets, groups, runs, billing, webhooks and attestation checks of a Sigil service",
        license: "Apache-2.0",
        type: "module",
        bin: { sigil: "sigil.js" },
        engines: { node: CLI_NODE_RANGE },
        // The chunks carry their dependencies' licence notices beside them (*.LEGAL.txt).
        files: ["sigil.js", "chunks/", "README.md"],
      },
      null,
      2,
    )}\n`,
  );
  copyFileSync(join(root, "bin/package/README.md"), join(staging, "README.md"));
  const out = execFileSync("npm", ["pack", "--pack-destination", join(root, "dist/packages")], {
    cwd: staging,
    encoding: "utf8",
  });
  return join(root, "dist/packages", out.trim().split("\n").at(-1) as string);
}

if (import.meta.main) console.log(await buildCliPackage());
