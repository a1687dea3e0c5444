// The dashboard served from the edge's own origin (dashboard.ts): its page under a CSP that allows
// this origin only (and Stripe's API for confirming payments), its script and stylesheet from the
// static assets that `npm run build` wrote (dashboard/build.ts), and nothing else under /dashboard/.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";

const ORIGIN = "http://edge";

describe("/dashboard", () => {
  it("serves the page with a CSP of this origin alone (no inline script or style), Stripe's API to confirm payments and the PCCS for Intel's collateral", async () => {
    const res = await SELF.fetch(`${ORIGIN}/dashboard`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = res.headers.get("content-security-policy") as string;
    expect(csp.split("; ")).toEqual([
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data:",
      "font-src 'self'",
      // No STRIPE_API_BASE in this suite: Stripe's own API; and the PCCS of the Attestation page's verifier.
      "connect-src 'self' https://api.stripe.com https://pccs.phala.network",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ]);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    const html = await res.text();
    expect(html).toContain('<script type="module" src="/dashboard/app.js"></script>');
    expect(html).not.toMatch(/<script>(?!<)/);
    expect(html).not.toMatch(/\bstyle="/);
    expect((await SELF.fetch(`${ORIGIN}/dashboard/`)).status).toBe(200);
  });

  it("serves the bundle and the stylesheet; an unknown file is the API's 404, index.html redirects to the page", async () => {
    const js = await SELF.fetch(`${ORIGIN}/dashboard/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect((await js.text()).length).toBeGreaterThan(1000);
    const css = await SELF.fetch(`${ORIGIN}/dashboard/app.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get("content-type")).toMatch(/^text\/css/);
    const missing = await SELF.fetch(`${ORIGIN}/dashboard/nothing.js`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("not_found");
    const index = await SELF.fetch(`${ORIGIN}/dashboard/index.html`, { redirect: "manual" });
    expect(index.status).toBe(302);
    expect(index.headers.get("location")).toBe("/dashboard");
    expect((await SELF.fetch(`${ORIGIN}/dashboard/../core/v1/version`)).status).toBe(200);
  });

  it("serves the icon at /favicon.ico (an ICO holding a PNG) and as /dashboard/favicon.svg and .ico, each with its content type", async () => {
    const ico = await SELF.fetch(`${ORIGIN}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get("content-type")).toBe("image/x-icon");
    const bytes = new Uint8Array(await ico.arrayBuffer());
    expect([...bytes.slice(0, 4)]).toEqual([0, 0, 1, 0]);
    expect([...bytes.slice(22, 26)]).toEqual([0x89, 0x50, 0x4e, 0x47]);
    const svg = await SELF.fetch(`${ORIGIN}/dashboard/favicon.svg`);
    expect(svg.status).toBe(200);
    expect(svg.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    expect(await svg.text()).toContain("<svg");
    const again = await SELF.fetch(`${ORIGIN}/dashboard/favicon.ico`);
    expect(again.status).toBe(200);
    expect(again.headers.get("content-type")).toMatch(/^image\/(x-icon|vnd\.microsoft\.icon)/);
  });
});
