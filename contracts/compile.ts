// Compiles the contracts with solc-js (standard JSON, cancun, optimizer + viaIR) and writes:
//   contracts/out/<Contract>.json        abi, creation bytecode and deployed bytecode
//   shared/generated/accountConfigAbi.ts the ABI callers use at the proxy address (AccountConfig's
//                                        own plus the views its fallback forwards to), `as const`
//                                        so viem infers every call
// Both are build output (git-ignored); nothing in them is edited by hand. The build is skipped
// when the sources, compiler and settings are unchanged since the last run (`--force` rebuilds).
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import solc from "solc";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const outDir = join(root, "contracts/out");
const abiModule = join(root, "shared/generated/accountConfigAbi.ts");
const require = createRequire(import.meta.url);

/** Source folders compiled together; test fixtures are upgrade targets and mocks for the tests. */
const sourceDirs = ["contracts", "test/contract/fixtures"];

export const settings = {
  evmVersion: "cancun",
  viaIR: true,
  optimizer: { enabled: true, runs: 200 },
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
};

type SolcOutput = {
  errors?: { severity: "error" | "warning" | "info"; formattedMessage: string; sourceLocation?: { file: string } }[];
  contracts?: Record<
    string,
    Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >;
};

export type Artifact = {
  contractName: string;
  sourceName: string;
  abi: unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
};

export function ownSources(): Record<string, { content: string }> {
  const sources: Record<string, { content: string }> = {};
  for (const dir of sourceDirs) {
    const abs = join(root, dir);
    if (!existsSync(abs)) continue;
    for (const file of readdirSync(abs)
      .filter((f) => f.endsWith(".sol"))
      .sort()) {
      sources[`${dir}/${file}`] = { content: readFileSync(join(abs, file), "utf8") };
    }
  }
  return sources;
}

/** Resolves `@openzeppelin/...` imports from node_modules, and other paths from the repository root. */
export function findImport(path: string): { contents: string } | { error: string } {
  try {
    const pkg = path
      .split("/")
      .slice(0, path.startsWith("@") ? 2 : 1)
      .join("/");
    const pkgRoot = dirname(require.resolve(`${pkg}/package.json`));
    return { contents: readFileSync(join(pkgRoot, path.slice(pkg.length + 1)), "utf8") };
  } catch {
    const local = join(root, path);
    if (existsSync(local)) return { contents: readFileSync(local, "utf8") };
    return { error: `import not found: ${path}` };
  }
}

/** Changes whenever a source, the compiler, its settings, OpenZeppelin or this script changes. */
export function buildHash(sources: Record<string, { content: string }>): string {
  const oz = ["@openzeppelin/contracts", "@openzeppelin/contracts-upgradeable"].map(
    (p) => (JSON.parse(readFileSync(require.resolve(`${p}/package.json`), "utf8")) as { version: string }).version,
  );
  const self = readFileSync(fileURLToPath(import.meta.url), "utf8");
  return createHash("sha256")
    .update(JSON.stringify({ solc: solc.version(), settings, sources, oz, self }))
    .digest("hex");
}

/** AccountConfig's ABI merged with AccountConfigViews' (errors and shapes they share appear once). */
function proxyAbi(artifacts: Artifact[]): unknown[] {
  const pick = (name: string) => {
    const a = artifacts.find((x) => x.contractName === name);
    if (!a) throw new Error(`${name} was not in the compiler output`);
    return a.abi;
  };
  const seen = new Set<string>();
  return [...pick("AccountConfig"), ...pick("AccountConfigViews")].filter((item) => {
    const key = JSON.stringify(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

export function compile({ force = false } = {}): { skipped: boolean; artifacts: Artifact[] } {
  const sources = ownSources();
  const hash = buildHash(sources);
  const hashFile = join(outDir, ".build-hash");
  if (!force && existsSync(abiModule) && existsSync(hashFile) && readFileSync(hashFile, "utf8") === hash) {
    return { skipped: true, artifacts: [] };
  }

  const input = { language: "Solidity", sources, settings };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as SolcOutput;
  const problems = output.errors ?? [];
  // Warnings inside OpenZeppelin's sources are theirs to fix; ours and every error are shown.
  const shown = problems.filter(
    (e) =>
      e.severity === "error" || (e.severity === "warning" && (!e.sourceLocation || e.sourceLocation.file in sources)),
  );
  for (const p of shown) console.error(p.formattedMessage);
  if (problems.some((e) => e.severity === "error")) throw new Error("solc reported errors; nothing was written");

  const artifacts: Artifact[] = [];
  for (const [sourceName, contracts] of Object.entries(output.contracts ?? {})) {
    if (!(sourceName in sources)) continue; // OpenZeppelin's own contracts are not our artifacts
    for (const [contractName, c] of Object.entries(contracts)) {
      if (c.evm.bytecode.object === "") continue; // abstract: nothing to deploy
      artifacts.push({
        contractName,
        sourceName,
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      });
    }
  }

  mkdirSync(outDir, { recursive: true });
  for (const a of artifacts) writeFileSync(join(outDir, `${a.contractName}.json`), `${JSON.stringify(a, null, 2)}\n`);

  mkdirSync(dirname(abiModule), { recursive: true });
  writeFileSync(
    abiModule,
    `// Generated by contracts/compile.ts from contracts/AccountConfig*.sol. Do not edit: run \`npm run build\`.\n` +
      `export const accountConfigAbi = ${JSON.stringify(proxyAbi(artifacts), null, 2)} as const;\n`,
  );
  writeFileSync(hashFile, hash);
  return { skipped: false, artifacts };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  let result: ReturnType<typeof compile>;
  try {
    result = compile({ force: process.argv.includes("--force") });
  } catch (err) {
    console.error(`contracts: ${(err as Error).message}`);
    process.exit(1);
  }
  const { skipped, artifacts } = result;
  if (skipped) {
    console.log("contracts: up to date");
  } else {
    for (const a of artifacts) {
      const size = (a.deployedBytecode.length - 2) / 2;
      console.log(`contracts: ${a.contractName.padEnd(22)} ${String(size).padStart(6)} bytes deployed`);
    }
    console.log(
      `contracts: compiled in ${((Date.now() - started) / 1000).toFixed(1)} s -> ${relative(root, outDir)}, ${relative(root, abiModule)}`,
    );
  }
}
