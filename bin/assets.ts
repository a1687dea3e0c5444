// The edge's static assets (wrangler.toml, [assets]): `npm run build` copies into dist/assets/
// (git-ignored) what the edge serves as files, from the installed packages, so nothing a page
// needs comes from another origin. Today that is Swagger UI (swagger-ui-dist, the version
// package-lock.json pins): the script and stylesheet the page at /core/v1/swagger-ui loads from
// /swagger-ui/, its icons, and the package's license files. The folder is made afresh each time.
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";

const root = join(import.meta.dirname, "..");
/** The folder wrangler.toml's [assets] serves, at the site's root. */
export const assetsDir = join(root, "dist/assets");

/** What Swagger UI's page needs of swagger-ui-dist (workers/swaggerUi.ts names these), and the license that comes with it. */
export const SWAGGER_UI_FILES = [
  "swagger-ui-bundle.js",
  "swagger-ui-bundle.js.LICENSE.txt",
  "swagger-ui.css",
  "favicon-16x16.png",
  "favicon-32x32.png",
  "LICENSE",
  "NOTICE",
];

export function buildAssets(): string[] {
  const from = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  const to = join(assetsDir, "swagger-ui");
  rmSync(to, { recursive: true, force: true });
  mkdirSync(to, { recursive: true });
  for (const file of SWAGGER_UI_FILES) copyFileSync(join(from, file), join(to, file));
  return SWAGGER_UI_FILES.map((file) => relative(root, join(to, file)));
}

if (import.meta.main) {
  const files = buildAssets();
  console.log(`assets: ${files.length} files -> ${relative(root, assetsDir)}/swagger-ui/`);
}
