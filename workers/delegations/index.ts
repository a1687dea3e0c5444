// Reaching an account's Delegations object (store.ts) from the edge's routes and middleware, without
// importing the object's own module (which only workerd can load).
import { accountObject } from "../billing/account.ts";
import type { Delegations } from "./store.ts";

/** The Delegations object of the account `master` (its master hash). */
export const delegationsOf = (namespace: DurableObjectNamespace<Delegations> | undefined, master: bigint) =>
  accountObject(namespace, master, "delegated keys need the DELEGATIONS Durable Object, which is not bound");
