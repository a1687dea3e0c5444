// Builds @sigil/sdk (run by the root's `npm run build`, so `npm ci` leaves it ready):
//   1. src/generated/api.ts from the edge's OpenAPI document (generate.ts)
//   2. dist/index.js, dist/solana.js (the @solana/kit signer) and dist/delegation.js (delegated keys,
//      offline): ES modules bundled by esbuild, their
//      shared code in dist/chunks/, viem and @solana/kit left as the peer imports, nothing Node-only,
//      so they load unchanged in Node ≥ 20, browsers, Workers, Deno and Bun
//   3. dist/types: the declarations, by tsc (tsconfig.build.json)
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { build } from "esbuild";
import { generate } from "./generate.ts";

const sdk = join(import.meta.dirname, "..");
const generated = join(sdk, "src/generated/api.ts");
mkdirSync(dirname(generated), { recursive: true });
writeFileSync(generated, await generate());

rmSync(join(sdk, "dist"), { recursive: true, force: true });
await build({
  // Two entries, their shared code in chunks (so an error thrown by one is the other's SigilError too).
  entryPoints: {
    index: join(sdk, "src/index.ts"),
    solana: join(sdk, "src/solana.ts"),
    delegation: join(sdk, "src/delegation.ts"),
  },
  outdir: join(sdk, "dist"),
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  external: ["viem", "viem/*", "@solana/kit"],
  sourcemap: true,
  legalComments: "none",
  logLevel: "warning",
});
execFileSync(
  process.execPath,
  [join(sdk, "../node_modules/typescript/bin/tsc"), "-p", join(sdk, "tsconfig.build.json")],
  { stdio: "inherit" },
);
console.log("sdk: built sdk/dist (index.js, types/)");
