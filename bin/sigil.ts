#!/usr/bin/env node
// The `sigil` command (`npx sigil <command>`, or `npm run -s sigil -- <command>`): `start` runs the
// local stack until Ctrl-C (npm start); `verify` checks a deployment's attestation; `verify-receipt`
// a run's signed receipt; `edge-identity`
// makes the edge's channel identity; the rest is every flow of the service through @sigil/sdk
// (bin/cli/: one file per group of commands, bin/cli/context.ts for what they share).
// `--help` (or `-h`) prints a command's usage and does nothing else, for every command.
import { didYouMean, runCommand, runGroup, type Command, type Group } from "./cli/context.ts";
import { cliVersion } from "./cli/version.ts";

const startUsage = `usage: sigil start   (npm start)

  Runs the local stack until Ctrl-C: anvil (unless SIGIL_RPC_URL is set), AccountConfig, the
  enclave (SIMULATED TEE), the local Stripe emulator (unless STRIPE_SECRET_KEY is set) and the API
  on 127.0.0.1:8787, and writes their addresses to .sigil/local.json (or $SIGIL_STATE_DIR), where
  the other commands find the API. Its variables are in docs/operations/configuration.md.`;

type TopLevel = { summary: string; run(args: string[]): Promise<number> };

/**
 * The commands of bin/cli/, each loaded when it is run: `sigil key add --help` loads key.ts and what
 * it imports, and a command loads the SDK and viem only when it runs (context.ts), so help and usage
 * errors answer at once. `sigil --help` loads them all, for their summaries.
 */
const modules: Record<string, () => Promise<Group | Command>> = {
  profile: async () => (await import("./cli/profile.ts")).profileGroup,
  account: async () => (await import("./cli/account.ts")).accountGroup,
  key: async () => (await import("./cli/key.ts")).keyGroup,
  wallet: async () => (await import("./cli/wallet.ts")).walletGroup,
  group: async () => (await import("./cli/group.ts")).groupGroup,
  action: async () => (await import("./cli/action.ts")).actionGroup,
  audit: async () => (await import("./cli/audit.ts")).auditCommand,
  cid: async () => (await import("./cli/run.ts")).cidCommand,
  run: async () => (await import("./cli/run.ts")).runCommand,
  transaction: async () => (await import("./cli/transaction.ts")).transactionGroup,
  mcp: async () => (await import("./cli/mcp.ts")).mcpCommand,
  balance: async () => (await import("./cli/billing.ts")).balanceCommand,
  topup: async () => (await import("./cli/billing.ts")).topUpCommand,
  usage: async () => (await import("./cli/billing.ts")).usageCommand,
  webhook: async () => (await import("./cli/webhook.ts")).webhookGroup,
  guardrail: async () => (await import("./cli/guardrail.ts")).guardrailGroup,
  "chain-secured": async () => (await import("./cli/chainSecured.ts")).chainSecuredGroup,
  convert: async () => (await import("./cli/chainSecured.ts")).convertCommand,
};

const isGroup = (entry: Group | Command): entry is Group => "commands" in entry;

/** The commands that are not in bin/cli/: the heavy ones (the stack, the verifier) load only when run. */
const own: Record<string, TopLevel> = {
  start: {
    summary: "run the local stack until Ctrl-C (npm start)",
    async run(args) {
      if (args.includes("--help") || args.includes("-h")) {
        console.log(startUsage);
        return 0;
      }
      if (args.length > 0) {
        console.error("sigil start: takes no arguments: its settings are environment variables (sigil start --help)");
        return 2;
      }
      const { startLocalStack } = await import("./stack/start.ts");
      return startLocalStack();
    },
  },
  verify: {
    summary: "check a deployment: its quote, event log, /info, evidences, TLS, governance",
    run: async (args) => (await import("./verify/verify.ts")).verifyCommand(args),
  },
  "verify-receipt": {
    summary: "check a run's signed receipt against the attestation of the instance that signed it",
    run: async (args) => (await import("./verify/receipt.ts")).verifyReceiptCommand(args),
  },
  "edge-identity": {
    summary: "make the edge's channel identity (a secret seed and the public key enclaves allow)",
    run: async (args) => (await import("./identity/edgeIdentity.ts")).edgeIdentityCommand(args),
  },
};

const names = [...Object.keys(own), ...Object.keys(modules)];

const sections: Array<[string, string[]]> = [
  ["the local stack and deployments", ["start", "verify", "verify-receipt", "edge-identity"]],
  [
    "accounts, keys and what they own",
    ["profile", "account", "key", "wallet", "guardrail", "group", "action", "audit"],
  ],
  ["scripts", ["cid", "run", "transaction"]],
  ["agents", ["mcp"]],
  ["credit", ["balance", "topup", "usage"]],
  ["events", ["webhook"]],
  [
    "accounts administered by a wallet (signing with SIGIL_PRIVATE_KEY or --keystore)",
    ["chain-secured", "convert", "wallet create --sign", "key add --sign"],
  ],
];

async function usage(): Promise<string> {
  const loaded = Object.fromEntries(
    await Promise.all(Object.entries(modules).map(async ([name, load]) => [name, await load()] as const)),
  );
  const line = (e: string): [string, string] => {
    if (e === "wallet create --sign") return [e, "a wallet for the signer's ChainSecured account"];
    if (e === "key add --sign") return [e, "a usage key for the signer's ChainSecured account"];
    const entry = loaded[e];
    if (entry === undefined) return [e, own[e]?.summary ?? ""];
    if (!isGroup(entry)) return [e, entry.summary];
    return [`${e} ${entry.commands.map((c) => c.name.slice(e.length + 1)).join("|")}`, entry.summary];
  };
  const rows = sections.map(([title, entries]) => ({ title, lines: entries.map(line) }));
  const width = Math.max(...rows.flatMap((r) => r.lines.map(([name]) => name.length)));
  return `usage: sigil <command> [options]   (npx sigil …, or npm run -s sigil -- …; on Node 24)

${rows.map((r) => `${r.title}:\n${r.lines.map(([name, summary]) => `  ${name.padEnd(width)}  ${summary}`).join("\n")}`).join("\n\n")}

Every command takes --help. Commands that call the service take --api URL and --key KEY, or find
them in SIGIL_API_URL / SIGIL_API_KEY, a profile (sigil profile set), or the running stack's
.sigil/local.json; --json prints the answer as one JSON document (a failure too, as {"error": …}).
Errors are one line with the service's code and request id; the exit code is 1 on failure, 2 for a
usage error. sigil --version prints the version.`;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === "--help" || command === "-h") {
    console.log(await usage());
    return 0;
  }
  if (command === "--version" || command === "-v" || command === "version") {
    console.log(`sigil ${cliVersion()} (Node ${process.version})`);
    return 0;
  }
  if (command === "help") {
    // `sigil help key add` is `sigil key add --help`.
    return args.length === 0 ? main([]) : main([...args, "--help"]);
  }
  if (Object.hasOwn(own, command)) return (own[command] as TopLevel).run(args);
  const load = Object.hasOwn(modules, command) ? modules[command] : undefined;
  if (!load) {
    // One line, not the whole usage: what was typed, the nearest command, where the list is.
    console.error(`sigil: unknown command: ${command}${didYouMean(command, names)} (sigil --help)`);
    return 2;
  }
  const entry = await load();
  return isGroup(entry) ? runGroup(entry, args) : runCommand(entry, args);
}

process.exitCode = await main(process.argv.slice(2));
