// `sigil mcp`: Sigil's MCP server on stdio, for an agent on this machine (Claude Desktop, an IDE, an
// agent framework): the same tools as the edge's /core/v1/mcp (workers/mcp/server.ts), calling the
// API at the connection's URL with its key. stdout is the protocol's; what the command says to a
// person goes to stderr.
import { UsageError, type Command } from "./context.ts";
import { cliVersion } from "./version.ts";

export const mcpCommand: Command = {
  name: "mcp",
  summary: "serve Sigil's tools to an agent over MCP (stdio)",
  usage: `

  Runs an MCP server on stdin/stdout with the key's tools: list_wallets (both addresses, and what
  each may sign in words), list_actions, run_action, dry_run, check_guardrail, send_transaction,
  list_transactions, get_transaction, get_balance, recent_usage, and run_code for the master key.
  Each tool is a call of the API with the key, billed and limited as that call. An agent's configuration runs it as
  \`sigil mcp --key <usage key>\` (or with SIGIL_API_URL and SIGIL_API_KEY set).`,
  async run({ ctx }) {
    const { baseUrl, apiKey } = ctx.connection();
    if (!apiKey)
      throw new UsageError("no API key: give --key, set SIGIL_API_KEY, or save one in a profile (sigil profile set)");
    // Loaded only for this command: the other commands start without the MCP SDK (and, in the packed
    // CLI's single bundle, its modules are evaluated after zod's, which they build on).
    const [{ StdioServerTransport }, { httpApi }, { sigilMcpServer }] = await Promise.all([
      import("@modelcontextprotocol/sdk/server/stdio.js"),
      import("../../workers/mcp/api.ts"),
      import("../../workers/mcp/server.ts"),
    ]);
    const api = httpApi(baseUrl, apiKey, (request) => fetch(request));
    const server = await sigilMcpServer(api, { version: cliVersion() });
    const transport = new StdioServerTransport();
    await server.connect(transport);
    process.stderr.write(`sigil mcp: serving ${baseUrl} on stdio\n`);
    await new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
      process.stdin.once("end", () => resolve());
    });
    await server.close();
  },
};
