// Builds @sigil/sdk (run by the root's `npm run build`, so `npm ci` leaves it ready):
//   1. src/generated/api.ts from the edge's OpenAPI document (generate.ts)
//   2. dist/index.js: one ES module bundled by esbuild, viem left as the peer import, nothing
//      Node-only, so it loads unchanged in Node ≥ 20, browsers, Workers, Deno and Bun
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
  entryPoints: [join(sdk, "src/index.ts")],
  outfile: join(sdk, "dist/index.js"),
  bundle: true,
  format: "esm",
  platform: "neutral",
  target: "es2022",
  external: ["viem", "viem/*"],
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
