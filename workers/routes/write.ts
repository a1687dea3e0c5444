// A managed write on behalf of the caller: the validated body plus the caller's raw key, forwarded
// to an enclave, which checks permissions itself and submits the transaction. This is the one place
// billing plugs in (billing.md): hold 1 cent before forwarding, settle it once the enclave has sent
// the transaction, release it on a rejection; the settled amount replaces the 0 of
// X-Sigil-Charged-Cents.
import type { Context } from "hono";
import type { EnclaveOperation, EnclaveResponse } from "../../shared/enclaveApi.ts";
import type { EdgeEnv } from "../app.ts";
import { forward } from "../enclave/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { toWire } from "./openapi.ts";

export async function forwardWrite<Op extends EnclaveOperation>(c: Context<EdgeEnv>, op: Op, input: unknown): Promise<EnclaveResponse<Op>> {
  const { apiKey } = callerKey(c);
  const res = await forward<EnclaveResponse<Op>>(c.get("config"), c.get("ids"), op, { ...(toWire(input) as object), api_key: apiKey });
  c.header("X-Sigil-Charged-Cents", "0");
  return res;
}
