// Which URLs may receive an account's webhooks (issue 14): checked when an endpoint is registered and
// again before every delivery. On a local deployment (SIGIL_ENV development or test: `npm start`,
// the tests) any http(s) URL goes, loopback included, so a receiver on the developer's machine gets
// its events. In production the URL must be HTTPS and its host must not name the service's own
// networks: an IP literal is classified with the enclave's fetch-guard ranges (shared/addressClass.ts)
// and must be public; a name must not be one that only resolves inside a network (localhost,
// *.localhost, *.local, *.internal, *.home.arpa, *.lan, or a single label). The edge cannot resolve
// DNS itself, so a public name that resolves to a private address is not caught here: Cloudflare's
// fetch from a Worker does not reach private networks (RFC 1918, loopback, link-local) at all, which
// is the guard for that case.
import { classifyAddress, describeAddressClass, isIPv4 } from "../../shared/addressClass.ts";
import { SigilError } from "../../shared/errors.ts";

/** The longest URL an endpoint may have. */
export const MAX_WEBHOOK_URL_CHARS = 2048;

/** Host names that never leave the network they are asked from (RFC 6761, 6762, 8375; ICANN's .internal). */
const LOCAL_NAME = /(^|\.)(localhost|local|internal|home\.arpa|lan|intranet|corp)$/;

/** Whether the deployment is a local one (not production), where loopback and plain http are allowed. */
export type UrlPolicy = { local: boolean };

function refuse(message: string, reason: string): SigilError {
  return new SigilError("invalid_webhook_url", message, { details: { reason } });
}

/**
 * The URL `raw` as an endpoint may have it (normalized by the URL parser), or 400
 * `invalid_webhook_url` with `details.reason`: `malformed`, `credentials`, `scheme`, `not_https`,
 * `private_address` (with the address's class) or `local_name`.
 */
export function checkWebhookUrl(raw: string, policy: UrlPolicy): URL {
  if (raw.length > MAX_WEBHOOK_URL_CHARS)
    throw refuse(`a webhook URL is at most ${MAX_WEBHOOK_URL_CHARS} characters`, "malformed");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("the webhook URL is not a valid absolute URL", "malformed");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw refuse("a webhook URL must be http(s)", "scheme");
  if (url.username !== "" || url.password !== "")
    throw refuse(
      "a webhook URL may not carry a user name or password; use the signing secret to authenticate Sigil",
      "credentials",
    );
  if (url.hostname === "") throw refuse("the webhook URL has no host", "malformed");
  if (policy.local) return url;
  if (url.protocol !== "https:") throw refuse("a webhook URL must use https", "not_https");
  const host = url.hostname.toLowerCase().replace(/\.$/, "");
  // The URL parser has turned every IPv4 spelling (decimal, hex, short forms) into dotted decimal.
  if (isIPv4(host) || host.startsWith("[")) {
    const cls = classifyAddress(host);
    if (cls !== "public") {
      throw new SigilError(
        "invalid_webhook_url",
        `a webhook URL may not point to a ${describeAddressClass(cls)} address`,
        { details: { reason: "private_address", address_class: cls } },
      );
    }
    return url;
  }
  if (LOCAL_NAME.test(host) || !host.includes("."))
    throw refuse(`a webhook URL may not name a host that only resolves inside a network (${host})`, "local_name");
  return url;
}
