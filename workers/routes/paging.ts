// Pagination and group ids in query strings (docs/design/api.md, Conventions): `page_number` (default 0) and
// `page_size` (default 10, max 100; more → 400); list answers are JSON arrays with the total in
// `X-Total-Count`. A group id in a query string is a decimal string (a u64).
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 100;
const U64_MAX = (1n << 64n) - 1n;

const pageNumber = z
  .string()
  .regex(/^\d{1,9}$/, "must be a non-negative integer")
  .optional()
  .transform((v) => (v === undefined ? 0 : Number(v)))
  // Documented as what it is, an integer (a query string carries it as text, which the regex reads).
  .openapi({
    param: { name: "page_number", in: "query" },
    type: "integer",
    minimum: 0,
    description: "zero-based page (default 0)",
    example: 0,
  });

/**
 * A count in a query string (`page_size`, an events page's `limit`): a decimal from 1 to `max`,
 * `fallback` when absent; parsed to a number. `what` names the counted things in the document.
 */
export function countParam(name: string, what: string, fallback: number, max: number) {
  return z
    .string()
    .regex(/^\d{1,9}$/, "must be a positive integer")
    .optional()
    .transform((v) => (v === undefined ? fallback : Number(v)))
    .refine((v) => v >= 1 && v <= max, `must be between 1 and ${max}`)
    .openapi({
      param: { name, in: "query" },
      type: "integer",
      minimum: 1,
      maximum: max,
      description: `${what} per page (default ${fallback}, max ${max})`,
      example: fallback,
    });
}

const pageSize = countParam("page_size", "items", DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);

/** The query of every list endpoint; parsed: `{page_number: number, page_size: number}`. */
export const pageQuerySchema = z.object({ page_number: pageNumber, page_size: pageSize });
export type PageQuery = z.output<typeof pageQuerySchema>;

/** A `group_id` query parameter: a decimal string; parsed to a bigint (u64). */
export const groupIdParam = z
  .string()
  .regex(/^\d{1,20}$/, "must be a decimal number")
  .transform((v) => BigInt(v))
  .refine((v) => v <= U64_MAX, "must fit in 64 bits")
  .openapi({ param: { name: "group_id", in: "query" }, description: "a group id (decimal)", example: "1" });

/** `[page, size]` as the contract's list views take them. */
export function pageArgs(q: PageQuery): [bigint, bigint] {
  return [BigInt(q.page_number), BigInt(q.page_size)];
}

/** A list answer: one page of a list view's `[items, total]`, each item as `toItem` shows it, the total in `X-Total-Count`. */
export function pageAnswer<T, U>(
  c: Context,
  [items, total]: readonly [readonly T[], bigint | number],
  toItem: (item: T) => U,
) {
  c.header("X-Total-Count", String(total));
  return c.json(items.map(toItem), 200);
}
