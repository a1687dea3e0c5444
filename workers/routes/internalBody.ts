// The body of a request an enclave sends the edge on a run's behalf (budgets, transactions,
// settlements: routes that are not a client's and not in the OpenAPI document): JSON, and what its
// schema says, or the client's 400 naming what the body is not.
import type { Context } from "hono";
import type { z } from "zod";
import { SigilError } from "../../shared/errors.ts";
import type { EdgeEnv } from "../router.ts";
import { verifyBudgetToken } from "../budgets/token.ts";

/** The request's body parsed by `schema`; `what` names it in the refusal ("a budget request"). */
export async function internalBody<T extends z.ZodType>(
  c: Context<EdgeEnv>,
  schema: T,
  what: string,
): Promise<z.output<T>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new SigilError("invalid_json", "the body is not JSON");
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    throw new SigilError("invalid_request", `not ${what}: ${parsed.error.issues[0]?.message ?? "invalid"}`);
  return parsed.data;
}

/** The run the request's bearer token names (its billing ref), or 401: `purpose` says what needed one. */
export async function runRef(c: Context<EdgeEnv>, purpose: string): Promise<string> {
  const seed = c.get("config").channel.identityKey;
  const token = c.req.header("authorization")?.replace(/^Bearer\s+/i, "") ?? "";
  const ref = seed ? await verifyBudgetToken(seed, token, Date.now()) : undefined;
  if (ref === undefined) throw new SigilError("invalid_api_key", `${purpose} needs a run's token`);
  return ref;
}
