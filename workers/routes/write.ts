// A managed write on behalf of the caller: the validated body plus the caller's raw key, forwarded
// to an enclave, which checks permissions itself and submits the transaction, charged 1 cent
// (billing/meter.ts: held before forwarding, settled once the transaction is sent, released when
// the enclave refuses it). X-Sigil-Charged-Cents says what it cost.
import type { Context } from "hono";
import type { EnclaveOperation, EnclaveResponse } from "../../shared/enclaveApi.ts";
import type { EdgeEnv } from "../app.ts";
import { meteredWrite } from "../billing/meter.ts";
import { forward } from "../enclave/client.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { toWire } from "./openapi.ts";

export async function forwardWrite<Op extends EnclaveOperation>(c: Context<EdgeEnv>, op: Op, input: unknown): Promise<EnclaveResponse<Op>> {
  const { apiKey } = callerKey(c);
  const { result, chargedCents } = await meteredWrite(c, () =>
    forward<EnclaveResponse<Op>>(c.get("config"), c.get("ids"), op, { ...(toWire(input) as object), api_key: apiKey }),
  );
  c.header("X-Sigil-Charged-Cents", String(chargedCents));
  return result;
}
