// Reaching an account's Transactions object (store.ts) from the edge's routes, without importing the
// object's own module (which only workerd can load: the OpenAPI document and the SDK are built in Node).
import { SigilError } from "../../shared/errors.ts";
import { toHash32 } from "../../shared/hashing.ts";
import type { Transactions } from "./store.ts";

/** The Transactions object of the account `master` (a master hash, as a number or 0x hex). */
export function transactionsOf(
  namespace: DurableObjectNamespace<Transactions> | undefined,
  master: bigint | string,
): DurableObjectStub<Transactions> {
  if (!namespace)
    throw new SigilError("internal_error", "transactions need the TRANSACTIONS Durable Object, which is not bound");
  const account = typeof master === "bigint" ? toHash32(master) : master;
  return namespace.get(namespace.idFromName(account.toLowerCase()));
}
