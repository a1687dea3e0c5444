// GET /usage: the account's usage history (billing/usage.ts), as JSON or, for `Accept: text/csv`,
// as CSV. The caller is named as on the billing endpoints: an API key, or X-Wallet-Auth signed by a
// ChainSecured account's admin wallet. The master key (and the admin wallet) sees every event of
// the account; a usage key sees only its own runs and writes.
import type { OpenAPIHono } from "@hono/zod-openapi";
import { z } from "zod";
import { SigilError } from "../../shared/errors.ts";
import { runReceiptSchema, runReceiptV1Schema } from "../../shared/operations.ts";
import { newRouter, type EdgeEnv } from "../router.ts";
import { billingCaller, hashHex, ledgerToRead } from "../billing/account.ts";
import { CSV_COLUMNS, decodeCursor, USAGE_KINDS, usageCsv, usagePage, type UsageKind } from "../billing/usage.ts";
import { billingCredentials, billingSecurity, requireCredentials } from "./billing.ts";
import { route } from "./openapi.ts";
import { countParam } from "./paging.ts";

export const DEFAULT_USAGE_LIMIT = 50;
export const MAX_USAGE_LIMIT = 100;

/** A point in time as ISO 8601 or Unix seconds, in milliseconds. */
const instant = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return undefined;
      const ms = /^\d{1,12}$/.test(v) ? Number(v) * 1000 : /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : Number.NaN;
      if (Number.isNaN(ms)) {
        ctx.addIssue({ code: "custom", message: "must be an ISO 8601 time (2026-11-25T10:00:00Z) or Unix seconds" });
        return z.NEVER;
      }
      return ms;
    })
    .openapi({ param: { name, in: "query" }, example: "2026-11-01T00:00:00Z" });

const usageQuery = z.object({
  cursor: z
    .string()
    .max(64)
    .optional()
    .openapi({
      param: { name: "cursor", in: "query" },
      description: "next_cursor of the page before; absent for the newest page",
    }),
  limit: countParam("limit", "events", DEFAULT_USAGE_LIMIT, MAX_USAGE_LIMIT),
  from: instant("from").describe("only events at or after this time"),
  to: instant("to").describe("only events before this time"),
  kind: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      const kinds = v.split(",");
      const unknown = kinds.filter((k) => !(USAGE_KINDS as readonly string[]).includes(k));
      if (unknown.length) {
        ctx.addIssue({
          code: "custom",
          message: `unknown kind ${unknown.join(", ")}; kinds are ${USAGE_KINDS.join(", ")}`,
        });
        return z.NEVER;
      }
      return kinds as UsageKind[];
    })
    .openapi({
      param: { name: "kind", in: "query" },
      description: `only these kinds, comma-separated: ${USAGE_KINDS.join(", ")}`,
      example: "run,write",
    }),
  key_hash: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "must be a key hash, 0x and 64 hex digits")
    .optional()
    .openapi({
      param: { name: "key_hash", in: "query" },
      description: "only the runs and writes of this usage key (its hash, as list_api_keys shows it)",
    }),
  wallet: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, "must be a wallet address, 0x and 40 hex digits")
    .optional()
    .openapi({
      param: { name: "wallet", in: "query" },
      description:
        "only the runs whose receipt lists signatures by this wallet: its signature history, each entry with the receipt to check it by",
    }),
});

/** A text field of an event that some kinds of event do not have (null for them). */
const orNull = (about: string) => z.string().nullable().describe(about);

const usageEventSchema = z
  .object({
    id: z.string().describe("the event's id in this account's history"),
    time: z.string().describe("when it was recorded, ISO 8601"),
    kind: z
      .enum([...USAGE_KINDS, "charge"])
      .describe('run, write, top_up or refund ("charge" for charges recorded before kinds were)'),
    key_hash: orNull("the usage key that ran or wrote (its hash; null for the master key, a top-up or a refund)"),
    cid: orNull("a run's action CID"),
    operation: orNull("a write's endpoint, e.g. add_group"),
    duration_ms: z.number().int().nullable().describe("a run's duration"),
    amount_cents: z
      .number()
      .int()
      .describe("how this event moved the balance: + for a top-up, − for a charge or a refund"),
    charged_cents: z
      .number()
      .int()
      .nonnegative()
      .describe("what a run or write was charged (0 for a top-up or refund)"),
    balance_after_cents: z
      .number()
      .int()
      .nullable()
      .describe("the settled balance right after this event (credit held by work in flight not subtracted)"),
    request_id: orNull("the request a charge was for (under an Idempotency-Key, its first attempt's)"),
    transaction_hash: orNull("a write's transaction"),
    payment_intent: orNull("a top-up's or refund's Stripe payment intent"),
    error_code: orNull("a failed run's error code"),
    hold_expired: z.boolean().describe("charged in full because its hold expired before the edge could settle it"),
    delegated_key: orNull(
      "a run through a delegated key: the id of its last block (key_hash is its root usage key's; the receipt's delegation names the whole chain)",
    ),
    receipt: z
      .union([runReceiptSchema, runReceiptV1Schema])
      .nullable()
      .describe(
        "a run's signed receipt, as the run answered it (null for other kinds, and for runs from before receipts)",
      ),
  })
  .openapi("UsageEvent");

const usage = route("GET /usage", "Billing", {
  operationId: "listUsage",
  summary:
    "The account's usage history, newest first: runs, writes, top-ups and refunds with their cost and the balance after; pages by cursor (JSON, or CSV with Accept: text/csv)",
  security: billingSecurity,
  middleware: [requireCredentials],
  request: { query: usageQuery },
  ok: {
    description: "a page of events; next_cursor (also in X-Next-Cursor) asks for the next, null on the last",
    headers: z.object({ "X-Next-Cursor": z.string().optional() }),
    content: {
      "application/json": {
        schema: z.object({ events: z.array(usageEventSchema), next_cursor: z.string().nullable() }),
      },
      "text/csv": { schema: z.string().describe(`a header row (${CSV_COLUMNS.join(",")}) and one row per event`) },
    },
  },
  // 400: the query or the cursor, or two kinds of credentials; 403: a usage key asking for another key's events.
  errors: [400, 401, 403, 404, 413, 429, 503],
  // The SDK's client.all.listUsage iterates it by cursor (sdk/scripts/generate.ts reads this).
  "x-sigil-paging": { style: "cursor", items: "events" },
});

export function usageRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();

  r.openapi(usage, async (c) => {
    const query = c.req.valid("query");
    const before = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const credentials = billingCredentials(c);
    const { master } = await billingCaller(c.get("config"), credentials, "read");
    // A usage key reads its own events only.
    let keyHash = query.key_hash?.slice(2).toLowerCase();
    if ("key" in credentials && credentials.key.keyHash !== master) {
      const own = hashHex(credentials.key.keyHash);
      if (keyHash !== undefined && keyHash !== own)
        throw new SigilError("permission_denied", "a usage key sees only its own usage");
      keyHash = own;
    }
    const page = usagePage(
      await (await ledgerToRead(c.env.LEDGER, master)).usage({
        limit: query.limit,
        ...(before === undefined ? {} : { before }),
        ...(query.from === undefined ? {} : { from: query.from }),
        ...(query.to === undefined ? {} : { to: query.to }),
        ...(query.kind === undefined ? {} : { ops: query.kind }),
        ...(keyHash === undefined ? {} : { keyHash }),
        ...(query.wallet === undefined ? {} : { wallet: query.wallet.toLowerCase() }),
      }),
    );
    if (page.next_cursor !== null) c.header("X-Next-Cursor", page.next_cursor);
    if ((c.req.header("accept") ?? "").includes("text/csv")) {
      return c.body(usageCsv(page.events), 200, { "Content-Type": "text/csv; charset=utf-8" });
    }
    return c.json(page, 200);
  });

  return r;
}
