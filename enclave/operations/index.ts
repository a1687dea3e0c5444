// The enclave's half of the operation table (shared/operations.ts): the function that does each
// operation, by the same name, and `createDispatcher`, to which the channel (channel/channel.ts)
// hands each opened request `{op, ids, input}`. It checks the operation's body limit, parses the
// input with the operation's schema, calls the operation and answers its output or its error as
// the client gets it; operations know nothing of HTTP or of the channel. An operation that acts,
// sent with an Idempotency-Key, is done once per key (operationMemory.ts): a repeat joins it or gets
// its answer, marked `replayed`.
import type { OperationAnswer, OperationRequest } from "../../shared/channel/channel.ts";
import { isOperation, operations, type OperationName, type ParsedInput } from "../../shared/operations.ts";
import { errorBody, isExposed, SigilError, type IssueDetail } from "../../shared/errors.ts";
import { OperationMemory } from "../operationMemory.ts";
import { addAction, deleteAction, updateActionMetadata } from "./actions.ts";
import { newAccount } from "./accounts.ts";
import { requestContext, type Enclave, type RequestContext } from "./context.ts";
import {
  addActionToGroup,
  addGroup,
  addPkpToGroup,
  removeActionFromGroup,
  removeGroup,
  removePkpFromGroup,
  updateGroup,
} from "./groups.ts";
import { addUsageApiKeyWithSignature, convertToChainSecuredAccount, createWalletWithSignature } from "./signatures.ts";
import { sigilAction } from "./sigilAction.ts";
import { checkDelegatedKey, delegateKey } from "./delegation.ts";
import {
  addUsageApiKey,
  removeUsageApiKey,
  setUsageKeyGuardrail,
  updateUsageApiKey,
  updateUsageApiKeyMetadata,
} from "./usageKeys.ts";
import { createWallet, setWalletGuardrail, solanaAddresses } from "./wallets.ts";

type Handler<Op extends OperationName> = (
  enclave: Enclave,
  input: ParsedInput<Op>,
  ctx: RequestContext,
) => Promise<unknown>;

/** What the enclave serves through the table besides its own operations: its health and its attestation. */
export type DispatchParts = {
  /** The whole health report (health.ts). */
  health: () => Promise<unknown>;
  /** The public `/attestation` answer to `query` (`?nonce=…`) for the client `client`, with the request's ids. */
  attestation: (query: string, client: string, ids: Record<string, string>) => Promise<Response>;
};

/** Headers of an attestation answer that go back to the edge with it. */
const ATTESTATION_HEADERS = [
  "content-type",
  "cache-control",
  "retry-after",
  "x-attestation-simulated",
  "x-sigil-instance",
];
/** The longest Idempotency-Key the edge lets through (docs/design/api.md). */
const MAX_IDEMPOTENCY_KEY = 255;
/**
 * What a sealed request carries besides the client's body: the caller's key the edge adds, the
 * request's ids, the timestamp and nonce. An input is refused once the whole request passes the
 * operation's body limit by more than this.
 */
const ENVELOPE_BYTES = 4 << 10;

function handlers(parts: DispatchParts): { [Op in OperationName]: Handler<Op> } {
  return {
    new_account: newAccount,
    create_wallet: createWallet,
    add_usage_api_key: addUsageApiKey,
    update_usage_api_key: updateUsageApiKey,
    update_usage_api_key_metadata: updateUsageApiKeyMetadata,
    remove_usage_api_key: removeUsageApiKey,
    add_group: addGroup,
    remove_group: removeGroup,
    update_group: updateGroup,
    add_action_to_group: addActionToGroup,
    remove_action_from_group: removeActionFromGroup,
    add_pkp_to_group: addPkpToGroup,
    remove_pkp_from_group: removePkpFromGroup,
    add_action: addAction,
    delete_action: deleteAction,
    update_action_metadata: updateActionMetadata,
    set_wallet_guardrail: setWalletGuardrail,
    set_usage_key_guardrail: setUsageKeyGuardrail,
    convert_to_chain_secured_account: convertToChainSecuredAccount,
    create_wallet_with_signature: createWalletWithSignature,
    add_usage_api_key_with_signature: addUsageApiKeyWithSignature,
    sigil_action: sigilAction,
    delegate_key: delegateKey,
    check_delegated_key: checkDelegatedKey,
    solana_addresses: solanaAddresses,
    health: () => parts.health(),
    attestation: async (_enclave, input, ctx) => {
      const ids = {
        "x-request-id": ctx.requestId,
        ...(ctx.correlationId ? { "x-correlation-id": ctx.correlationId } : {}),
      };
      const res = await parts.attestation(input.query, `edge:${input.client}`, ids);
      const headers: Record<string, string> = {};
      for (const name of ATTESTATION_HEADERS) {
        const value = res.headers.get(name);
        if (value !== null) headers[name] = value;
      }
      return { status: res.status, headers, body: await res.text() };
    },
  };
}

/**
 * What an error becomes for the client: its code, status and message for an exposed SigilError (Retry-After
 * when it has one), `internal_error` with nothing of the cause for anything else (the cause goes
 * to the log with the request id).
 */
export function errorAnswer(err: unknown, ctx: RequestContext): Extract<OperationAnswer, { ok: false }> {
  if (isExposed(err)) {
    if (err.status >= 500)
      ctx.log.error("request failed", {
        code: err.code,
        error: err.cause instanceof Error ? err.cause.message : undefined,
      });
    return {
      ok: false,
      status: err.status,
      error: errorBody(err, ctx.requestId).error,
      ...(err.retryAfterSeconds === undefined ? {} : { retry_after: err.retryAfterSeconds }),
    };
  }
  const e = err instanceof Error ? err : new Error(String(err));
  ctx.log.error("unexpected error", { error: e.message, stack: e.stack?.split("\n").slice(0, 6).join(" | ") });
  return {
    ok: false,
    status: 500,
    error: errorBody(new SigilError("internal_error", "an internal error occurred"), ctx.requestId).error,
  };
}

function parseInput<Op extends OperationName>(op: Op, input: unknown): ParsedInput<Op> {
  const result = operations[op].input.safeParse(input);
  if (result.success) return result.data as ParsedInput<Op>;
  const details: IssueDetail[] = result.error.issues.map((i) => ({
    path: i.path.map(String).join(".") || "(body)",
    message: i.code === "unrecognized_keys" ? `unknown field(s): ${i.keys.join(", ")}` : i.message,
  }));
  throw new SigilError("invalid_request", "the request body is not valid for this operation", { details });
}

/** Answers each opened request (`bytes`: its size inside the seal) by the operation it names. */
export function createDispatcher(
  enclave: Enclave,
  parts: DispatchParts,
): (request: OperationRequest, bytes: number) => Promise<OperationAnswer> {
  const table = handlers(parts);
  const memory = new OperationMemory();

  const perform = async (op: OperationName, input: unknown, ctx: RequestContext): Promise<OperationAnswer> => {
    try {
      const started = performance.now();
      const output = await (table[op] as Handler<OperationName>)(enclave, parseInput(op, input) as never, ctx);
      if (op !== "health" && op !== "attestation")
        ctx.log.info("operation done", { op, ms: Math.round(performance.now() - started) });
      return { ok: true, output };
    } catch (err) {
      const answer = errorAnswer(err, ctx);
      if (!(operations[op].errors as readonly string[]).includes(answer.error.code))
        ctx.log.warn("an operation answered a code its table entry does not list", { op, code: answer.error.code });
      return answer;
    }
  };

  return async (request, bytes) => {
    const ctx = requestContext(enclave.log, request.ids.request_id, request.ids.correlation_id);
    const { op, input } = request;
    if (!isOperation(op)) return errorAnswer(new SigilError("not_found", `no operation named ${op}`), ctx);
    const spec = operations[op];
    if (bytes > spec.bodyLimit + ENVELOPE_BYTES)
      return errorAnswer(
        new SigilError("payload_too_large", `the request body must be at most ${spec.bodyLimit} bytes`),
        ctx,
      );
    const key = request.idempotency_key;
    // Only an operation that acts is remembered: a read may be asked again, and an operation refused
    // before it was taken (an unknown name, an oversized body) is nothing to replay.
    const remembered =
      key !== undefined && key.length <= MAX_IDEMPOTENCY_KEY && spec.kind !== "read"
        ? OperationMemory.identify(op, key, input)
        : undefined;
    if (!remembered) return perform(op, input, ctx);
    const { answer, replayed } = await memory.once(remembered.scope, remembered.fingerprint, ctx.requestId, () =>
      perform(op, input, ctx),
    );
    if (!replayed) return answer;
    ctx.log.info("answered from the idempotency memory", { op });
    return { ...answer, replayed: true };
  };
}
