// Builds the dashboard (run by the root's `npm run build`): one ES module bundle (Preact, the
// pages, @sigil/sdk and the parts of viem it uses), one stylesheet and the icon (favicon.ts), minified by esbuild into
// dist/assets/dashboard/ beside index.html, which the edge serves at /dashboard (workers/dashboard.ts)
// under a CSP that allows nothing from another origin. Code a page loads by `import()` (the
// Attestation page's verifier) is split into chunks of its own, fetched when that page opens. Prints
// the gzipped size of what a first visit downloads (the page, the stylesheet, the entry script and
// the chunks it imports statically) and of each chunk loaded later, and fails above the budgets.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { FAVICON_SVG, faviconIco } from "./favicon.ts";

const here = import.meta.dirname;
const root = join(here, "..");
export const dashboardOut = join(root, "dist/assets/dashboard");
/** The most a first visit may download, gzipped (issue 15). */
export const BUDGET_BYTES = 150 * 1024;
/** The most any chunk loaded later by one page may add, gzipped (the verifier is ~110 KiB). */
export const LAZY_BUDGET_BYTES = 150 * 1024;

export type DashboardBuild = {
  files: string[];
  /** What a first visit downloads, gzipped. */
  gzipBytes: number;
  /** Each chunk fetched later by an `import()`, gzipped, by file. */
  lazy: Record<string, number>;
};

export async function buildDashboard(): Promise<DashboardBuild> {
  rmSync(dashboardOut, { recursive: true, force: true });
  mkdirSync(dashboardOut, { recursive: true });
  const result = await build({
    entryPoints: [join(here, "src/main.tsx")],
    outdir: dashboardOut,
    entryNames: "app",
    bundle: true,
    format: "esm",
    splitting: true,
    chunkNames: "chunk-[hash]",
    metafile: true,
    platform: "browser",
    target: "es2022",
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: true,
    legalComments: "linked",
    logLevel: "warning",
  });
  copyFileSync(join(here, "index.html"), join(dashboardOut, "index.html"));
  // The icon (favicon.ts); the edge serves the ICO at /favicon.ico too.
  writeFileSync(join(dashboardOut, "favicon.svg"), FAVICON_SVG);
  writeFileSync(join(dashboardOut, "favicon.ico"), faviconIco());
  const gz = (file: string) => gzipSync(readFileSync(join(dashboardOut, file)), { level: 9 }).length;
  // The scripts a first visit runs: app.js and, transitively, what it imports statically.
  const outputs = result.metafile.outputs;
  const name = (out: string) => relative(dashboardOut, join(root, out));
  const entry = Object.keys(outputs).find((o) => name(o) === "app.js");
  if (!entry) throw new Error("dashboard: esbuild wrote no app.js");
  const first = new Set<string>();
  const visit = (out: string) => {
    if (first.has(out)) return;
    first.add(out);
    for (const i of outputs[out]?.imports ?? []) if (i.kind === "import-statement") visit(i.path);
  };
  visit(entry);
  const scripts = Object.keys(outputs).filter((o) => o.endsWith(".js"));
  const firstFiles = ["index.html", "app.css", ...scripts.filter((o) => first.has(o)).map(name)];
  const lazy = Object.fromEntries(scripts.filter((o) => !first.has(o)).map((o) => [name(o), gz(name(o))]));
  const gzipBytes = firstFiles.reduce((sum, f) => sum + gz(f), 0);
  const files = ["index.html", "app.css", "favicon.svg", "favicon.ico", ...scripts.map(name)].map((f) =>
    relative(root, join(dashboardOut, f)),
  );
  return { files, gzipBytes, lazy };
}

if (import.meta.main) {
  const { files, gzipBytes, lazy } = await buildDashboard();
  const kib = (bytes: number) => (bytes / 1024).toFixed(1);
  console.log(
    `dashboard: ${files.length} files -> ${relative(root, dashboardOut)}/, first visit ${kib(gzipBytes)} KiB gzipped (budget ${BUDGET_BYTES / 1024} KiB)`,
  );
  for (const [file, bytes] of Object.entries(lazy))
    console.log(
      `dashboard:   + ${file} ${kib(bytes)} KiB gzipped, loaded when its page opens (budget ${LAZY_BUDGET_BYTES / 1024} KiB)`,
    );
  let over = false;
  if (gzipBytes > BUDGET_BYTES) {
    console.error(`dashboard: the first visit is over its budget by ${kib(gzipBytes - BUDGET_BYTES)} KiB`);
    over = true;
  }
  for (const [file, bytes] of Object.entries(lazy)) {
    if (bytes > LAZY_BUDGET_BYTES) {
      console.error(`dashboard: ${file} is over its budget by ${kib(bytes - LAZY_BUDGET_BYTES)} KiB`);
      over = true;
    }
  }
  if (over) process.exit(1);
}
