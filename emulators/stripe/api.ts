// What every part of the Stripe emulator shares: Stripe's error answers, its ids, and its form
// parameters (bracket syntax) with readers that refuse a wrong shape as Stripe does.
import { randomBytes } from "node:crypto";

// The version events are rendered at when the request that made the object sent no
// `Stripe-Version` (the SDK always sends its own, stripe@23's being this one).
export const DEFAULT_API_VERSION = "2026-10-28.endive";

export type Params = Record<string, unknown>;
export type Answer = { status: number; body: unknown; headers?: Record<string, string> };
export type Auth = "secret" | "publishable";

// A Stripe error answer. `saved: false` marks parameter errors, which Stripe's idempotency layer
// does not remember.
export class StripeApiError extends Error {
  status: number;
  body: Record<string, unknown>;
  saved: boolean;
  constructor(status: number, body: Record<string, unknown>, saved = true) {
    super(String(body.message));
    this.status = status;
    this.body = body;
    this.saved = saved;
  }
}

export function apiError(
  status: number,
  type: string,
  message: string,
  extra: Record<string, unknown> = {},
  saved = true,
): StripeApiError {
  const code = extra.code;
  const docUrl =
    typeof code === "string" ? { doc_url: `https://stripe.com/docs/error-codes/${code.replace(/_/g, "-")}` } : {};
  return new StripeApiError(status, { ...extra, ...docUrl, message, type }, saved);
}
export const invalidParam = (message: string, param: string, code = "parameter_invalid") =>
  apiError(400, "invalid_request_error", message, { code, param }, false);
export const missingParam = (param: string) =>
  invalidParam(`Missing required param: ${param}.`, param, "parameter_missing");
export const noSuch = (kind: string, id: string, param: string, status = 404) =>
  apiError(status, "invalid_request_error", `No such ${kind}: '${id}'`, { code: "resource_missing", param }, false);

/** The object `id` among `objects` (GET /v1/<kind>s/:id), or Stripe's resource_missing. */
export function stored<T>(kind: string, objects: ReadonlyMap<string, T>, id: string): T {
  const found = objects.get(id);
  if (!found) throw noSuch(kind, id, "id");
  return found;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
export function randomToken(length: number): string {
  const bytes = randomBytes(length);
  let out = "";
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}
export const newId = (prefix: string) => `${prefix}_${randomToken(24)}`;
export const now = () => Math.floor(Date.now() / 1000);

// `a[b][c]=v` → {a: {b: {c: v}}}; objects keyed 0..n-1 (`a[0]`, or `a[]`) become arrays.
// Null-prototype objects, so a parameter named `__proto__` is just a name.
export function parseStripeForm(text: string): Params {
  const root: Params = Object.create(null) as Params;
  for (const [key, value] of new URLSearchParams(text)) {
    const m = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(key);
    if (!m) throw invalidParam(`Invalid parameter name: ${key}`, key);
    const path = [m[1] as string, ...[...(m[2] ?? "").matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1] as string)];
    let node = root;
    for (let i = 0; i < path.length; i++) {
      let segment = path[i] as string;
      if (segment === "") segment = String(Object.keys(node).length);
      if (i === path.length - 1) {
        if (segment in node) throw invalidParam(`Received a parameter twice: ${key}`, key);
        node[segment] = value;
      } else {
        const next = node[segment] ?? (node[segment] = Object.create(null) as Params);
        if (typeof next !== "object") throw invalidParam(`Invalid parameter: ${key} mixes a value and a hash`, key);
        node = next as Params;
      }
    }
  }
  const arrays = (value: unknown): unknown => {
    if (typeof value !== "object" || value === null) return value;
    const entries = Object.entries(value as Params).map(([k, v]) => [k, arrays(v)] as const);
    if (entries.length > 0 && entries.every(([k], i) => k === String(i))) return entries.map(([, v]) => v);
    const out = Object.create(null) as Params;
    for (const [k, v] of entries) out[k] = v;
    return out;
  };
  return arrays(root) as Params;
}

// Parameter readers that answer like Stripe when a value has the wrong shape.
export function allowOnly(params: Params, allowed: string[]): void {
  for (const name of Object.keys(params)) {
    if (!allowed.includes(name)) {
      throw invalidParam(
        `Received unknown parameter: ${name} (the local Stripe emulator does not emulate it)`,
        name,
        "parameter_unknown",
      );
    }
  }
}
export function optString(params: Params, name: string): string | undefined {
  const v = params[name];
  if (v === undefined) return undefined;
  if (typeof v !== "string") throw invalidParam(`Invalid string: ${name} must be a string`, name);
  return v;
}
export function reqString(params: Params, name: string): string {
  const v = optString(params, name);
  if (v === undefined || v === "") throw missingParam(name);
  return v;
}
export function reqInteger(params: Params, name: string): number {
  const v = reqString(params, name);
  if (!/^-?\d+$/.test(v)) throw invalidParam(`Invalid integer: ${v}`, name, "parameter_invalid_integer");
  return Number(v);
}
export function optBoolean(params: Params, name: string, value: unknown = params[name]): boolean | undefined {
  if (value === undefined) return undefined;
  if (value !== "true" && value !== "false") throw invalidParam(`Invalid boolean: ${String(value)}`, name);
  return value === "true";
}
export function metadataOf(params: Params): Record<string, string> {
  const v = params.metadata;
  const out = Object.create(null) as Record<string, string>;
  if (v === undefined || v === "") return out;
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw invalidParam("Invalid hash", "metadata");
  const entries = Object.entries(v as Params);
  if (entries.length > 50) throw invalidParam("Invalid metadata: metadata can have at most 50 keys", "metadata");
  for (const [key, value] of entries) {
    if (typeof value !== "string")
      throw invalidParam(`Invalid value type: metadata[${key}] must be a string`, `metadata[${key}]`);
    if (key.length > 40)
      throw invalidParam(`Invalid metadata key: keys can be at most 40 characters`, `metadata[${key}]`);
    if (value.length > 500)
      throw invalidParam(`Invalid metadata value: values can be at most 500 characters`, `metadata[${key}]`);
    if (value !== "") out[key] = value;
  }
  return out;
}
export function optEmail(params: Params, name: string): string | null {
  const v = optString(params, name);
  if (v === undefined || v === "") return null;
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v)) throw invalidParam(`Invalid email address: ${v}`, name, "email_invalid");
  return v;
}
