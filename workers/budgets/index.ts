// Reaching a wallet's Budgets object (store.ts) from the edge's routes, without importing the object's
// own module (which only workerd can load: the OpenAPI document and the SDK are built in Node).
import { SigilError } from "../../shared/errors.ts";
import { toHash32 } from "../../shared/hashing.ts";
import type { Budgets } from "./store.ts";

/** The Budgets object of `wallet` of the account `master` (a master hash, as a number or 0x hex). */
export function budgetsOf(
  namespace: DurableObjectNamespace<Budgets> | undefined,
  master: bigint | string,
  wallet: string,
): DurableObjectStub<Budgets> {
  if (!namespace) throw new SigilError("internal_error", "budgets need the BUDGETS Durable Object, which is not bound");
  const account = typeof master === "bigint" ? toHash32(master) : master;
  return namespace.get(namespace.idFromName(`${account.toLowerCase()}:${wallet.toLowerCase()}`));
}
