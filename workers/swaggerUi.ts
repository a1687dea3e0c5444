// Swagger UI for the OpenAPI document (docs/design/api.md, Conventions: OpenAPI), with nothing from another
// origin: the page at /core/v1/swagger-ui and its initializer are the edge's own; Swagger UI's
// script, stylesheet and icons are static assets that `npm run build` copies from swagger-ui-dist
// into dist/assets/swagger-ui/ (bin/assets.ts), served at /swagger-ui/ through the ASSETS binding
// (wrangler.toml [assets]). The page's Content-Security-Policy lets it load scripts, styles and data
// from its own origin only.
import type { Hono } from "hono";
import { SigilError } from "../shared/errors.ts";
import type { EdgeEnv } from "./router.ts";

/** Where the page is, and the document it shows. */
export const SWAGGER_UI_PATH = "/core/v1/swagger-ui";
const DOCUMENT_PATH = "/core/v1/openapi.json";
/** The initializer, the page's only script of its own (inline scripts are not allowed). */
const INIT_PATH = `${SWAGGER_UI_PATH}/init.js`;
/** Where the static assets put swagger-ui-dist's files (bin/assets.ts). */
const ASSETS = "/swagger-ui";

/**
 * Scripts, styles, images, fonts and requests from this origin only; no inline script or style, no
 * plugin, frame, form target or <base>; never framed. `data:` images: swagger-ui.css draws its icons
 * as data: SVGs. "Try it out" sends its requests to the document's server, this origin.
 */
export const SWAGGER_UI_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Sigil API</title>
    <link rel="stylesheet" href="${ASSETS}/swagger-ui.css">
    <link rel="icon" type="image/png" href="${ASSETS}/favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="${ASSETS}/favicon-16x16.png" sizes="16x16">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${ASSETS}/swagger-ui-bundle.js"></script>
    <script src="${INIT_PATH}"></script>
  </body>
</html>
`;

// validatorUrl "none": Swagger UI would otherwise show a badge fetched from validator.swagger.io.
const INIT = `window.ui = SwaggerUIBundle({
  url: ${JSON.stringify(DOCUMENT_PATH)},
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: "none",
});
`;

/**
 * Serves the page, its initializer, Swagger UI's files from the static assets, and `/` as a
 * redirect to the page. The Worker runs first for every request (wrangler.toml, run_worker_first),
 * so these files take the same way under wrangler dev, in tests and in production.
 */
export function serveSwaggerUi(app: Hono<EdgeEnv>): void {
  app.get(SWAGGER_UI_PATH, (c) => {
    c.header("Content-Security-Policy", SWAGGER_UI_CSP);
    c.header("X-Content-Type-Options", "nosniff");
    return c.html(PAGE);
  });
  app.get(INIT_PATH, (c) => {
    c.header("X-Content-Type-Options", "nosniff");
    return c.body(INIT, 200, { "Content-Type": "text/javascript; charset=utf-8" });
  });
  app.get(`${ASSETS}/*`, async (c) => {
    const res = await c.env.ASSETS?.fetch(c.req.raw);
    if (!res || res.status === 404) throw new SigilError("not_found", `no route for ${c.req.method} ${c.req.path}`);
    // A copy: the binding's answer has immutable headers, and the middleware adds its own.
    return new Response(res.body, res);
  });
  app.get("/", (c) => c.redirect(SWAGGER_UI_PATH));
}
