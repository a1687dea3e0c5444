// The dashboard (dashboard/, built by `npm run build` into dist/assets/dashboard/): its page at
// /dashboard and its script and stylesheet, served from the static assets (wrangler.toml [assets])
// under a Content-Security-Policy that lets the page load nothing from another origin and run no
// inline script or style. It talks to this origin's API; the other origins it may reach are Stripe's
// API (or the local Stripe emulator `npm start` runs), where the Billing page confirms a payment with
// the publishable key, as Stripe.js would, the PCCS the verifier takes Intel's collateral from
// when the Attestation page checks a quote of real hardware (collateral Intel signed, which the
// verifier checks against Intel's root, so where it comes from is not a matter of trust), and the
// deployment's public RPC, where the wallet page reads receipts' anchors.
import type { Context, Hono } from "hono";
import { DEFAULT_PCCS } from "../shared/attestation/deployment.ts";
import { SigilError } from "../shared/errors.ts";
import type { EdgeEnv } from "./router.ts";

export const DASHBOARD_PATH = "/dashboard";
const STRIPE_API = "https://api.stripe.com";

/**
 * The page's CSP; `stripeOrigin`: where the Billing page confirms payments; `rpcOrigin`: the
 * deployment's public RPC, where the wallet page reads each receipt's anchor from the chain itself.
 */
export function dashboardCsp(stripeOrigin: string, rpcOrigin?: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${stripeOrigin} ${new URL(DEFAULT_PCCS).origin}${rpcOrigin ? ` ${rpcOrigin}` : ""}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

async function asset(c: Context<EdgeEnv>, path: string): Promise<Response> {
  const url = new URL(c.req.url);
  url.pathname = path;
  const res = await c.env.ASSETS?.fetch(new Request(url, c.req.raw));
  if (!res || res.status === 404) throw new SigilError("not_found", `no route for ${c.req.method} ${c.req.path}`);
  // A copy: the binding's answer has immutable headers, and the middleware adds its own.
  const copy = new Response(res.body, res);
  copy.headers.set("X-Content-Type-Options", "nosniff");
  return copy;
}

/**
 * Serves /dashboard (the page; /dashboard/ too), /dashboard/<file> from the static assets, and the
 * dashboard's icon at /favicon.ico, where browsers ask for a site's icon (dashboard/favicon.ts).
 */
export function serveDashboard(app: Hono<EdgeEnv>): void {
  const page = async (c: Context<EdgeEnv>) => {
    const res = await asset(c, `${DASHBOARD_PATH}/index.html`);
    const config = c.get("config");
    const apiBase = config.stripe.apiBase;
    let rpcOrigin: string | undefined;
    try {
      rpcOrigin = new URL(config.publicRpcUrl).origin;
    } catch {
      // No public RPC URL to name: the wallet page says its anchors could not be read.
    }
    res.headers.set(
      "Content-Security-Policy",
      dashboardCsp(apiBase ? new URL(apiBase).origin : STRIPE_API, rpcOrigin === "null" ? undefined : rpcOrigin),
    );
    res.headers.set("Cache-Control", "no-cache");
    res.headers.set("Referrer-Policy", "no-referrer");
    return res;
  };
  app.get(DASHBOARD_PATH, page);
  app.get(`${DASHBOARD_PATH}/`, page);
  app.get(`${DASHBOARD_PATH}/index.html`, (c) => c.redirect(DASHBOARD_PATH));
  app.get(`${DASHBOARD_PATH}/:file{[A-Za-z0-9._-]+}`, (c) => asset(c, c.req.path));
  app.get("/favicon.ico", async (c) => {
    const res = await asset(c, `${DASHBOARD_PATH}/favicon.ico`);
    res.headers.set("Content-Type", "image/x-icon");
    res.headers.set("Cache-Control", "public, max-age=86400");
    return res;
  });
}
