// Sigil's MCP server (workers/mcp/server.ts) through the official MCP TypeScript SDK's client, over
// both transports, against the real local stack: `sigil mcp` on stdio and the edge's POST
// /core/v1/mcp (streamable HTTP). Each: the tools listed with their input schemas (run_code for the
// master key only), an allowed action run, a signature its wallet's guardrail refuses reported with
// the rule, a dry run that signs nothing and says what would be refused, a transaction sent and
// followed until it is confirmed, and a call the API refuses
// (an account with no credit) reported with the API's code; over HTTP, no key is 401
// missing_api_key with the API's error body before anything else.
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { createTestClient, http as viemHttp, parseEther, verifyMessage, type Address, type Hex } from "viem";
import { foundry } from "viem/chains";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createSigilClient, grantSigner, topUp, type SigilClient } from "../../sdk/src/index.ts";
import { root } from "../harness/cli.ts";
import { NO_PERMISSIONS } from "../harness/permissions.ts";
import type { SharedLocalStack } from "../harness/localStack.ts";

const SIGN = `async function main({ wallet, message }) {
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}`;

let stack: SharedLocalStack;
let owner: SigilClient;
let ownerKey: string;
let usageKey: string;
let brokeKey: string;
let cid: string;
let wallet: Address;
/** A wallet with no guardrail that the key may send from through the SDK's signing action. */
let sender: Address;

beforeAll(async () => {
  stack = inject("localStack");
  const anon = createSigilClient({ baseUrl: stack.origin });
  const created = await anon.newAccount({ account_name: "agent" });
  ownerKey = created.api_key;
  owner = anon.with({ apiKey: ownerKey });
  await topUp(owner, { amountCents: 500 });
  wallet = (await owner.createWallet({ name: "agent wallet" })).wallet_address as Address;
  cid = await owner.getSigilActionIpfsId(SIGN);
  // The stack's IPFS gateway emulator serves the action to the enclave by its CID.
  expect(await (await fetch(`${stack.gatewayUrl}/add`, { method: "POST", body: SIGN })).json()).toMatchObject({ cid });
  await owner.addAction({ action_ipfs_cid: cid, name: "sign", description: "signs a message with a wallet" });
  const group = await owner.addGroup({
    group_name: "agent",
    group_description: "",
    pkp_ids_permitted: [wallet],
    cid_hashes_permitted: [cid],
  });
  // The master key's run_code runs code by its CID like any run: a group that permits any action.
  await owner.addGroup({
    group_name: "any code",
    group_description: "",
    pkp_ids_permitted: [],
    cid_hashes_permitted: ["0"],
  });
  // Messages only of this form: anything else is refused by the rule messages.pattern.
  await owner.setWalletGuardrail({
    wallet_address: wallet,
    guardrail: { version: 1, messages: { pattern: "Sign in to example.com*" } },
  });
  sender = (await owner.createWallet({ name: "agent sender" })).wallet_address as Address;
  const signerGroup = await grantSigner(owner, { wallet: sender });
  await createTestClient({ chain: foundry, transport: viemHttp(stack.rpcUrl), mode: "anvil" }).setBalance({
    address: sender,
    value: parseEther("1"),
  });
  const key = await owner.addUsageApiKey({
    name: "agent",
    description: "",
    ...NO_PERMISSIONS,
    execute_in_groups: [group.group_id, signerGroup.group_id],
  });
  usageKey = key.usage_api_key;
  // An account with no credit: its runs are refused by billing.
  brokeKey = (await anon.newAccount({ account_name: "broke agent" })).api_key;
}, 120_000);

type Connect = (key: string) => Promise<{ client: Client; close(): Promise<void> }>;

const stdio: Connect = async (key) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(root, "bin/sigil.ts"), "mcp", "--api", stack.origin, "--key", key],
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
    stderr: "pipe",
  });
  const client = new Client({ name: "sigil-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, close: () => client.close() };
};

const http: Connect = async (key) => {
  const transport = new StreamableHTTPClientTransport(new URL(`${stack.origin}/core/v1/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new Client({ name: "sigil-test", version: "1.0.0" });
  await client.connect(transport as Transport);
  return { client, close: () => client.close() };
};

/** The text of a tool's answer. */
function textOf(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const [first] = result.content as Array<{ type: string; text: string }>;
  return first?.text ?? "";
}

describe.each([
  ["stdio (sigil mcp)", stdio],
  ["streamable HTTP (POST /core/v1/mcp)", http],
])("MCP over %s", (_name, connect) => {
  let agent: Awaited<ReturnType<Connect>>;
  beforeAll(async () => {
    agent = await connect(usageKey);
  }, 60_000);
  afterAll(async () => {
    await agent?.close();
  });

  it("lists the tools with their input schemas; run_code only for the master key", async () => {
    const { tools } = await agent.client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        "check_guardrail",
        "dry_run",
        "get_balance",
        "get_transaction",
        "list_actions",
        "list_transactions",
        "list_wallets",
        "recent_usage",
        "run_action",
        "send_transaction",
      ].sort(),
    );
    const run = tools.find((t) => t.name === "run_action");
    expect(run?.inputSchema).toMatchObject({ type: "object", properties: { ipfs_id: { type: "string" } } });
    expect(run?.inputSchema.properties).toHaveProperty("js_params");
    expect(run?.description).toMatch(/guardrail_denied/);
    const master = await connect(ownerKey);
    try {
      expect((await master.client.listTools()).tools.map((t) => t.name)).toContain("run_code");
      // A call retried with its idempotency_key is the first call's answer: the code ran once.
      const call = {
        name: "run_code",
        arguments: {
          code: "async function main() { return crypto.randomUUID(); }",
          idempotency_key: crypto.randomUUID(),
        },
      };
      const once = JSON.parse(textOf(await master.client.callTool(call))) as { response: string };
      const again = JSON.parse(textOf(await master.client.callTool(call))) as { response: string };
      expect(again.response).toBe(once.response);
      const fresh = await master.client.callTool({
        ...call,
        arguments: { ...call.arguments, idempotency_key: crypto.randomUUID() },
      });
      expect((JSON.parse(textOf(fresh)) as { response: string }).response).not.toBe(once.response);
    } finally {
      await master.close();
    }
  });

  it("lists the wallets with both addresses and what each may sign, in words", async () => {
    const result = await agent.client.callTool({ name: "list_wallets", arguments: {} });
    expect(result.isError ?? false).toBe(false);
    const wallets = JSON.parse(textOf(result)) as Array<{
      wallet_address: string;
      solana_address: string;
      may_sign: string[];
    }>;
    const mine = wallets.find((w) => w.wallet_address.toLowerCase() === wallet.toLowerCase());
    expect(mine?.solana_address).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
    expect(mine?.may_sign.join(" ")).toMatch(/Sign in to example\.com/);
  });

  it("runs an allowed action: the wallet's signature comes back", async () => {
    const message = "Sign in to example.com at 12:00";
    const result = await agent.client.callTool({
      name: "run_action",
      arguments: { ipfs_id: cid, js_params: { wallet, message } },
    });
    expect(result.isError ?? false, textOf(result)).toBe(false);
    const answer = JSON.parse(textOf(result)) as { response: Hex; cid: string };
    expect(answer.cid).toBe(cid);
    expect(await verifyMessage({ address: wallet, message, signature: answer.response })).toBe(true);
    // Its dry run signs nothing, and lists the signature it would make as allowed, by its rule.
    const dry = await agent.client.callTool({
      name: "dry_run",
      arguments: { ipfs_id: cid, js_params: { wallet, message } },
    });
    expect(dry.isError ?? false, textOf(dry)).toBe(false);
    const dryAnswer = JSON.parse(textOf(dry)) as { response: Hex; dry_run: { requests: unknown[] } };
    expect(dryAnswer.response).toBe(`0x${"0".repeat(130)}`);
    expect(dryAnswer.dry_run.requests).toMatchObject([
      { wallet: wallet.toLowerCase(), kind: "message", allowed: true, rule: "messages.pattern" },
    ]);
  });

  it("reports a signature the guardrail refuses with its rule, and a dry run says so without signing", async () => {
    const js_params = { wallet, message: "transfer everything" };
    const denied = await agent.client.callTool({ name: "run_action", arguments: { ipfs_id: cid, js_params } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/guardrail_denied: .*\(rule messages\.pattern\)/);
    const dry = await agent.client.callTool({ name: "dry_run", arguments: { ipfs_id: cid, js_params } });
    // The script's call is refused in the dry run as in the run: the run fails, naming the rule.
    expect(dry.isError).toBe(true);
    expect(textOf(dry)).toMatch(/guardrail_denied.*messages\.pattern/);
    const check = await agent.client.callTool({
      name: "check_guardrail",
      arguments: { wallet_address: wallet, request: { kind: "message", message: "Sign in to example.com now" } },
    });
    expect(JSON.parse(textOf(check))).toMatchObject({ allowed: true, rule: "messages.pattern" });
  });

  it("sends a transaction through the service and follows it until it is confirmed", async () => {
    const sent = await agent.client.callTool({
      name: "send_transaction",
      arguments: {
        wallet_address: sender,
        transaction: { chainId: 31337, to: "0x6666666666666666666666666666666666666666", value: "42" },
      },
    });
    expect(sent.isError ?? false, textOf(sent)).toBe(false);
    const { response } = JSON.parse(textOf(sent)) as { response: { id: string; status: string; hash: Hex } };
    expect(response).toMatchObject({ status: "pending", id: expect.stringMatching(/^tx_/) });
    const followed = await agent.client.callTool({
      name: "get_transaction",
      arguments: { id: response.id, wait_seconds: 30 },
    });
    expect(JSON.parse(textOf(followed))).toMatchObject({ id: response.id, hash: response.hash, status: "confirmed" });
  });

  it("a call the API refuses is the tool's error with the API's code", async () => {
    const broke = await connect(brokeKey);
    try {
      const result = await broke.client.callTool({
        name: "run_action",
        arguments: { ipfs_id: cid, js_params: { wallet, message: "Sign in to example.com" } },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^insufficient_credits: .*\[request [0-9a-f-]{36}\]$/);
    } finally {
      await broke.close();
    }
  });
});

describe("POST /core/v1/mcp without a key, or with one that names no account", () => {
  it("is 401 with the API's error body, before any MCP", async () => {
    const res = await fetch(`${stack.origin}/core/v1/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: "missing_api_key" } });
    // A key of the right form that names no account: the API's 401, not a 500.
    const unknown = await fetch(`${stack.origin}/core/v1/mcp`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${Buffer.alloc(32, 7).toString("base64")}`,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: { code: "invalid_api_key" } });
  });
});
