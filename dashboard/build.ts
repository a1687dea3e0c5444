// Builds the dashboard (run by the root's `npm run build`): one ES module bundle (Preact, the
// pages, @sigil/sdk and the parts of viem it uses) and one stylesheet, minified by esbuild into
// dist/assets/dashboard/ beside index.html, which the edge serves at /dashboard (workers/dashboard.ts)
// under a CSP that allows nothing from another origin. Prints the gzipped size of what a browser
// downloads and fails above the budget.
import { copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const here = import.meta.dirname;
const root = join(here, "..");
export const dashboardOut = join(root, "dist/assets/dashboard");
/** The most a first visit may download, gzipped (issue 15). */
export const BUDGET_BYTES = 150 * 1024;

export async function buildDashboard(): Promise<{ files: string[]; gzipBytes: number }> {
  rmSync(dashboardOut, { recursive: true, force: true });
  mkdirSync(dashboardOut, { recursive: true });
  await build({
    entryPoints: [join(here, "src/main.tsx")],
    outdir: dashboardOut,
    entryNames: "app",
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    legalComments: "linked",
    logLevel: "warning",
  });
  copyFileSync(join(here, "index.html"), join(dashboardOut, "index.html"));
  const files = ["index.html", "app.js", "app.css"];
  const gzipBytes = files.reduce((sum, f) => sum + gzipSync(readFileSync(join(dashboardOut, f)), { level: 9 }).length, 0);
  return { files: files.map((f) => relative(root, join(dashboardOut, f))), gzipBytes };
}

if (import.meta.main) {
  const { files, gzipBytes } = await buildDashboard();
  const kib = (gzipBytes / 1024).toFixed(1);
  console.log(`dashboard: ${files.length} files -> ${relative(root, dashboardOut)}/, ${kib} KiB gzipped (budget ${BUDGET_BYTES / 1024} KiB)`);
  if (gzipBytes > BUDGET_BYTES) {
    console.error(`dashboard: over its budget by ${((gzipBytes - BUDGET_BYTES) / 1024).toFixed(1)} KiB`);
    process.exit(1);
  }
}
