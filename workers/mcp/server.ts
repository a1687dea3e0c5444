// Sigil as an MCP server (issue 33; docs/guides/agents.md): the tools an agent needs, each one call
// or a few of the API (api.ts), for the key the server was made with. Served two ways on the same
// tools: `sigil mcp` (stdio, bin/cli/mcp.ts) and the edge's POST /core/v1/mcp (streamable HTTP,
// routes/mcp.ts). Input schemas are the API's own zod schemas (shared/operations.ts, shared/guardrails),
// so a tool takes what the operation behind it takes. A refusal is a tool error naming the API's
// code, message, rule and request id — never a protocol error, so the agent reads why.
//
// `run_code` (a script sent as text) is listed only for the account's master key; like any run it is
// permitted by its CID (a group that lists it, or any action); a usage key runs the actions its
// groups list (`run_action`), by CID.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { z } from "zod";
import { describeGuardrail } from "../../shared/guardrails/describe.ts";
import { signRequestSchema } from "../../shared/guardrails/request.ts";
import type { Guardrail } from "../../shared/guardrails/schema.ts";
import { addressField, cidField, sigilActionRequestSchema } from "../../shared/operations.ts";
import { SIGNER_CODE } from "../../shared/signerAction.ts";
import { TERMINAL_STATUSES, TRANSACTION_STATUSES, type TransactionStatus } from "../../shared/transactions.ts";
import { SigilApiError, type SigilApi } from "./api.ts";

/** The tools a key gets (run_code only with the master key). */
export const MCP_TOOLS = [
  "list_wallets",
  "list_actions",
  "run_action",
  "dry_run",
  "run_code",
  "check_guardrail",
  "send_transaction",
  "list_transactions",
  "get_transaction",
  "get_balance",
  "recent_usage",
] as const;

/** How long get_transaction waits at most when asked to (s): an agent's call must end. */
const MAX_WAIT_S = 60;

const runFields = sigilActionRequestSchema.shape;
/** A tool that runs or sends takes the caller's Idempotency-Key: the same key again is the same run, answered again. */
const idempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .optional()
  .describe(
    "an Idempotency-Key: a retried call with the same key is answered with the first call's result, never run twice",
  );
const jsParams = runFields.js_params;
const timeoutMs = runFields.timeout_ms;

function ok(data: unknown): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(data, null, 2) }] };
}

function failed(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}

/** An API refusal as the tool's error: `code: message`, the rule of a guardrail's refusal, the request id. */
function refusal(err: unknown): CallToolResult {
  if (!(err instanceof SigilApiError)) throw err;
  const rule = (err.details as { rule?: unknown } | undefined)?.rule;
  return failed(
    `${err.code}: ${err.message}${typeof rule === "string" ? ` (rule ${rule})` : ""}${
      err.requestId ? ` [request ${err.requestId}]` : ""
    }`,
  );
}

async function guarded(work: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await work();
  } catch (err) {
    return refusal(err);
  }
}

type RunAnswer = {
  response?: unknown;
  logs: string;
  has_error: boolean;
  error?: { code: string; message: string };
  cid: string;
  duration_ms: number;
  dry_run?: { requests: unknown[] };
  receipt?: { charged_cents?: number; wallets?: Array<{ refused?: Array<{ rule?: string | null }> }> };
};

/** A run's answer for the agent: what the script returned, or its error as a tool error with its code and rule. */
function runResult(run: RunAnswer): CallToolResult {
  if (run.has_error) {
    // The rules that refused the run's signatures, as its receipt records them.
    const rules = [
      ...new Set(
        (run.receipt?.wallets ?? []).flatMap((w) => (w.refused ?? []).flatMap((r) => (r.rule ? [r.rule] : []))),
      ),
    ];
    return failed(
      `the run failed: ${run.error?.code ?? "error"}: ${run.error?.message ?? ""}${
        rules.length > 0 ? ` (rule ${rules.join(", ")})` : ""
      }${run.logs ? `\nlogs:\n${run.logs}` : ""}`,
    );
  }
  return ok({
    response: run.response ?? null,
    logs: run.logs,
    cid: run.cid,
    duration_ms: run.duration_ms,
    charged_cents: run.receipt?.charged_cents ?? 0,
    ...(run.dry_run ? { dry_run: run.dry_run } : {}),
  });
}

/**
 * An MCP server with Sigil's tools over `api` (one key's). The key's kind is read once (get_account):
 * the master key gets run_code too. `validator`: the JSON-schema validator the protocol's own checks
 * use (the edge passes one that runs without code generation, which Workers forbid).
 */
export async function sigilMcpServer(
  api: SigilApi,
  options: { version: string; validator?: jsonSchemaValidator },
): Promise<McpServer> {
  const account = (await api("GET", "get_account")) as { key: { kind: "master" | "usage" } };
  const server = new McpServer(
    { name: "sigil", version: options.version },
    {
      instructions:
        "Sigil signs with wallets whose keys stay inside an attested enclave, only from scripts (actions, by IPFS CID) the key may run, within each wallet's guardrail and budgets. Look at list_wallets (what each wallet may sign, in words) and list_actions first; dry_run shows what a run would sign and whether each signature is allowed, signing nothing.",
      ...(options.validator ? { jsonSchemaValidator: options.validator } : {}),
    },
  );

  server.registerTool(
    "list_wallets",
    {
      title: "Wallets",
      description:
        "The account's wallets: each one's EVM address, Solana address, name, and what its guardrail lets it sign, in words (no guardrail: whatever the scripts allowed to use it ask).",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () =>
      guarded(async () => {
        const wallets = (await api("GET", "list_wallets", { page_size: 100 })) as Array<{
          wallet_address: string;
          solana_address: string | null;
          name: string;
          description: string;
        }>;
        const described = await Promise.all(
          wallets.map(async (w) => {
            const g = (await api("GET", "get_wallet_guardrail", { wallet_address: w.wallet_address })) as {
              guardrail: Guardrail | null;
            };
            return {
              ...w,
              may_sign: g.guardrail ? describeGuardrail(g.guardrail) : ["anything its scripts ask (no guardrail)"],
            };
          }),
        );
        return ok(described);
      }),
  );

  server.registerTool(
    "list_actions",
    {
      title: "Actions",
      description:
        "The account's actions (scripts by IPFS CID): name, description, CID. run_action runs one by its CID.",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () => guarded(async () => ok(await api("GET", "list_actions", { page_size: 100 }))),
  );

  server.registerTool(
    "run_action",
    {
      title: "Run an action",
      description:
        "Runs an action by its IPFS CID with js_params (the object its main receives) and answers what it returned, its logs and what it cost. A signature the wallet's guardrail or budget refuses fails the script's call with guardrail_denied and the rule. Charged as a run.",
      inputSchema: { ipfs_id: cidField, js_params: jsParams, timeout_ms: timeoutMs, idempotency_key: idempotencyKey },
    },
    ({ idempotency_key, ...args }) =>
      guarded(async () =>
        runResult((await api("POST", "sigil_action", args, { idempotencyKey: idempotency_key })) as RunAnswer),
      ),
  );

  server.registerTool(
    "dry_run",
    {
      title: "Dry run",
      description:
        "Runs an action (by ipfs_id) with signing stubbed: every signature it asks for is authorized and checked against the wallet's guardrail and budgets as in a run, answered with zeros and listed in dry_run.requests with its decision (allowed, rule, reason). Nothing is signed. Charged as a run.",
      inputSchema: { ipfs_id: cidField, js_params: jsParams, timeout_ms: timeoutMs },
      annotations: { readOnlyHint: true },
    },
    (args) =>
      guarded(async () => runResult((await api("POST", "sigil_action", { ...args, dry_run: true })) as RunAnswer)),
  );

  if (account.key.kind === "master")
    server.registerTool(
      "run_code",
      {
        title: "Run code",
        description:
          "Runs JavaScript (an async function main(params)) with js_params, through Sigil.Actions (docs/actions.md). Offered to the master key only, and like any run it is permitted by its CID: a group of the account must permit that CID or any action (cid 0), with the wallets it uses — else permission_denied. dry_run: true signs nothing.",
        inputSchema: {
          code: runFields.code.unwrap(),
          js_params: jsParams,
          timeout_ms: timeoutMs,
          dry_run: runFields.dry_run,
          idempotency_key: idempotencyKey,
        },
      },
      ({ idempotency_key, ...args }) =>
        guarded(async () =>
          runResult((await api("POST", "sigil_action", args, { idempotencyKey: idempotency_key })) as RunAnswer),
        ),
    );

  server.registerTool(
    "check_guardrail",
    {
      title: "Check a signature against a guardrail",
      description:
        "Whether a wallet's guardrail allows a signature request (a transaction, a message, typed data, a Solana transaction), by which rule, and its budgets before and after. Nothing is signed or charged.",
      inputSchema: { wallet_address: addressField, request: signRequestSchema },
      annotations: { readOnlyHint: true },
    },
    (args) => guarded(async () => ok(await api("POST", "check_guardrail", args))),
  );

  const decimal = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, "a decimal integer string");
  server.registerTool(
    "send_transaction",
    {
      title: "Send a transaction",
      description:
        "Sends a transaction from a wallet through the service: nonce, gas and fees filled, signed inside the enclave within the wallet's guardrail and budgets, sent to the chain's RPC, and followed to confirmed, reverted, replaced or dropped (get_transaction with wait_seconds). Runs the SDK's signing action (SIGNER_CID): the key needs a group granting it with the wallet, as toSigilAccount does. Charged as a run.",
      inputSchema: {
        wallet_address: addressField,
        transaction: z.strictObject({
          chainId: z.number().int().positive().describe("a chain the deployment sends to"),
          to: addressField,
          value: decimal.optional().describe("wei"),
          data: z
            .string()
            .regex(/^0x([0-9a-fA-F]{2})*$/, "0x and hex bytes")
            .optional(),
          gas: decimal.optional(),
        }),
        idempotency_key: idempotencyKey,
      },
    },
    ({ wallet_address, transaction, idempotency_key }) =>
      guarded(async () =>
        runResult(
          (await api(
            "POST",
            "sigil_action",
            { code: SIGNER_CODE, js_params: { op: "sendTransaction", wallet: wallet_address, transaction } },
            { idempotencyKey: idempotency_key },
          )) as RunAnswer,
        ),
      ),
  );

  server.registerTool(
    "list_transactions",
    {
      title: "Transactions",
      description:
        "Transactions the account's scripts sent (Sigil.Actions.sendTransaction), newest first: status (pending, confirmed, reverted, replaced, dropped), hash, chain, nonce, fee.",
      inputSchema: {
        wallet_address: addressField.optional(),
        status: z.enum(TRANSACTION_STATUSES).optional(),
        limit: z.number().int().min(1).max(100).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    ({ limit, ...filters }) =>
      guarded(async () => ok(await api("GET", "transactions", { ...filters, limit: limit ?? 20 }))),
  );

  server.registerTool(
    "get_transaction",
    {
      title: "A transaction",
      description: `One transaction by its id (tx_…, what sendTransaction answered). With wait_seconds (at most ${MAX_WAIT_S}), waits until it is confirmed, reverted, replaced or dropped, and answers it as it is then.`,
      inputSchema: {
        id: z.string().regex(/^tx_[0-9a-f]{24}$/, "a transaction id: tx_ and 24 hex digits"),
        wait_seconds: z.number().int().min(0).max(MAX_WAIT_S).optional(),
      },
      annotations: { readOnlyHint: true },
    },
    ({ id, wait_seconds }) =>
      guarded(async () => {
        const deadline = Date.now() + (wait_seconds ?? 0) * 1000;
        for (;;) {
          const [t] = ((await api("GET", "transactions", { id })) as { transactions: Array<{ status: string }> })
            .transactions;
          if (!t) return failed(`not_found: no transaction ${id} in this account`);
          if (TERMINAL_STATUSES.has(t.status as TransactionStatus) || Date.now() >= deadline) return ok(t);
          await new Promise((r) => setTimeout(r, Math.min(1_000, Math.max(0, deadline - Date.now()))));
        }
      }),
  );

  server.registerTool(
    "get_balance",
    {
      title: "Balance",
      description: "The account's credit free to spend, in cents and dollars.",
      inputSchema: {},
      annotations: { readOnlyHint: true },
    },
    () => guarded(async () => ok(await api("GET", "billing/balance"))),
  );

  server.registerTool(
    "recent_usage",
    {
      title: "Recent usage",
      description:
        "The account's latest billed events (runs, writes, top-ups, refunds), newest first, with what each cost.",
      inputSchema: { limit: z.number().int().min(1).max(100).optional() },
      annotations: { readOnlyHint: true },
    },
    ({ limit }) => guarded(async () => ok(await api("GET", "usage", { limit: limit ?? 20 }))),
  );

  return server;
}
