// Swagger UI served from the edge's own origin (swaggerUi.ts): the page references only same-origin
// scripts and stylesheets, forbids others with its Content-Security-Policy, and every file it loads
// is there — Swagger UI's own from the static assets (the ASSETS binding of wrangler.toml's
// [assets], which Miniflare reads as wrangler dev does; `npm run build` fills dist/assets/), the
// initializer from the Worker — while every other path is still the Worker's.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const ORIGIN = "http://edge";

async function page(): Promise<{ res: Response; html: string }> {
  const res = await SELF.fetch(`${ORIGIN}/core/v1/swagger-ui`);
  return { res, html: await res.text() };
}

/** The `src` of every <script> and the `href` of every <link rel=stylesheet> (and icon) of `html`. */
function references(html: string): { scripts: string[]; styles: string[]; icons: string[]; inlineScripts: number } {
  const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1];
  const tags = (name: string) => html.match(new RegExp(`<${name}\\b[^>]*>`, "gi")) ?? [];
  const scripts = tags("script").map((t) => attr(t, "src"));
  const links = tags("link");
  return {
    scripts: scripts.filter((s): s is string => s !== undefined),
    inlineScripts: scripts.filter((s) => s === undefined).length,
    styles: links.filter((t) => /rel="stylesheet"/.test(t)).map((t) => attr(t, "href") ?? ""),
    icons: links.filter((t) => /rel="icon"/.test(t)).map((t) => attr(t, "href") ?? ""),
  };
}

/** The directives of a Content-Security-Policy header, by name. */
function directives(csp: string): Record<string, string[]> {
  return Object.fromEntries(
    csp
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...values]) => [name as string, values]),
  );
}

describe("Swagger UI", () => {
  it("is a page that loads its scripts and stylesheets from its own origin only: paths, no http(s):// or protocol-relative URL, no inline script", async () => {
    const { res, html } = await page();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const { scripts, styles, inlineScripts } = references(html);
    expect(scripts).toEqual(["/swagger-ui/swagger-ui-bundle.js", "/core/v1/swagger-ui/init.js"]);
    expect(styles).toEqual(["/swagger-ui/swagger-ui.css"]);
    expect(inlineScripts).toBe(0);
    for (const url of [...scripts, ...styles]) expect(url, url).toMatch(/^\/[^/]/);
    // Nowhere in a script or link tag: no CDN, no other origin.
    for (const tag of html.match(/<(script|link)\b[^>]*>/gi) ?? []) expect(tag).not.toMatch(/(https?:)?\/\//);
    expect(html).not.toMatch(/cdn\.|jsdelivr|unpkg/);
  });

  it("forbids scripts, styles and requests from other origins, and inline scripts, with its Content-Security-Policy", async () => {
    const { res } = await page();
    const csp = res.headers.get("content-security-policy");
    expect(csp).not.toBeNull();
    const d = directives(csp ?? "");
    expect(d["default-src"]).toEqual(["'none'"]);
    expect(d["script-src"]).toEqual(["'self'"]);
    expect(d["style-src"]).toEqual(["'self'"]);
    expect(d["connect-src"]).toEqual(["'self'"]);
    expect(d["img-src"]).toEqual(["'self'", "data:"]);
    expect(d["frame-ancestors"]).toEqual(["'none'"]);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("serves every file the page loads, with its content type: Swagger UI's from the static assets, the initializer (pointing at the document) from the Worker", async () => {
    const { html } = await page();
    const { scripts, styles, icons } = references(html);
    const expected: Array<[url: string, type: RegExp]> = [
      ...scripts.map((u): [string, RegExp] => [u, /^(text|application)\/javascript\b/]),
      ...styles.map((u): [string, RegExp] => [u, /^text\/css\b/]),
      ...icons.map((u): [string, RegExp] => [u, /^image\/png$/]),
    ];
    expect(expected.length).toBe(5);
    for (const [url, type] of expected) {
      const res = await SELF.fetch(`${ORIGIN}${url}`);
      const body = await res.text();
      expect(res.status, url).toBe(200);
      expect(res.headers.get("content-type"), url).toMatch(type);
      expect(body.length, url).toBeGreaterThan(0);
    }
    const bundle = await (await SELF.fetch(`${ORIGIN}/swagger-ui/swagger-ui-bundle.js`)).text();
    expect(bundle).toContain("SwaggerUIBundle");
    const init = await (await SELF.fetch(`${ORIGIN}/core/v1/swagger-ui/init.js`)).text();
    expect(init).toContain('"/core/v1/openapi.json"');
  });

  it("leaves every other path to the Worker: the API answers, an unknown path is the edge's 404, and / redirects to the page", async () => {
    const version = await SELF.fetch(`${ORIGIN}/core/v1/version`);
    expect(version.status).toBe(200);
    expect(version.headers.get("x-request-id")).not.toBeNull();
    const missing = await SELF.fetch(`${ORIGIN}/swagger-ui/no-such-file.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("not_found");
    const root = await SELF.fetch(`${ORIGIN}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/core/v1/swagger-ui");
  });
});
