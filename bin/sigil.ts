#!/usr/bin/env node
// The `sigil` command (`npx sigil <command>`, or `npm run -s sigil -- <command>`): `start` runs the
// local stack until Ctrl-C (npm start); `verify` checks a deployment's attestation; `verify-receipt`
// a run's signed receipt; `edge-identity`
// makes the edge's channel identity; the rest is every flow of the service through @sigil/sdk
// (bin/cli/: one file per group of commands, bin/cli/context.ts for what they share).
// `--help` (or `-h`) prints a command's usage and does nothing else, for every command.
import { accountGroup } from "./cli/account.ts";
import { auditCommand } from "./cli/audit.ts";
import { actionGroup } from "./cli/action.ts";
import { balanceCommand, topUpCommand, usageCommand } from "./cli/billing.ts";
import { chainSecuredGroup, convertCommand } from "./cli/chainSecured.ts";
import { didYouMean, runCommand, runGroup, type Command, type Group } from "./cli/context.ts";
import { groupGroup } from "./cli/group.ts";
import { keyGroup } from "./cli/key.ts";
import { profileGroup } from "./cli/profile.ts";
import { cidCommand, runCommand as runScriptCommand } from "./cli/run.ts";
import { walletGroup } from "./cli/wallet.ts";
import { transactionGroup } from "./cli/transaction.ts";
import { mcpCommand } from "./cli/mcp.ts";
import { cliVersion } from "./cli/version.ts";
import { webhookGroup } from "./cli/webhook.ts";
import { guardrailGroup } from "./cli/guardrail.ts";

const startUsage = `usage: sigil start   (npm start)

  Runs the local stack until Ctrl-C: anvil (unless SIGIL_RPC_URL is set), AccountConfig, the
  enclave (SIMULATED TEE), the local Stripe emulator (unless STRIPE_SECRET_KEY is set) and the API
  on 127.0.0.1:8787, and writes their addresses to .sigil/local.json (or $SIGIL_STATE_DIR), where
  the other commands find the API. Its variables are in docs/operations/configuration.md.`;

/** Defined by the packed CLI's bundle (bin/package/build.ts); undefined when run from the repository. */

type TopLevel = { summary: string; run(args: string[]): Promise<number> };

const group = (g: Group): TopLevel => ({ summary: g.summary, run: (args) => runGroup(g, args) });
const single = (c: Command): TopLevel => ({ summary: c.summary, run: (args) => runCommand(c, args) });

/** Every command; the heavy ones (the stack, the verifier) load only when run. */
const commands: Record<string, TopLevel> = {
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
  profile: group(profileGroup),
  account: group(accountGroup),
  key: group(keyGroup),
  wallet: group(walletGroup),
  group: group(groupGroup),
  action: group(actionGroup),
  audit: single(auditCommand),
  cid: single(cidCommand),
  run: single(runScriptCommand),
  transaction: group(transactionGroup),
  mcp: single(mcpCommand),
  balance: single(balanceCommand),
  topup: single(topUpCommand),
  usage: single(usageCommand),
  webhook: group(webhookGroup),
  guardrail: group(guardrailGroup),
  "chain-secured": group(chainSecuredGroup),
  convert: single(convertCommand),
};

const sections: Array<[string, Array<string | Group>]> = [
  ["the local stack and deployments", ["start", "verify", "verify-receipt", "edge-identity"]],
  [
    "accounts, keys and what they own",
    ["profile", accountGroup, keyGroup, walletGroup, guardrailGroup, groupGroup, actionGroup, "audit"],
  ],
  ["scripts", ["cid", "run", transactionGroup]],
  ["agents", ["mcp"]],
  ["credit", ["balance", "topup", "usage"]],
  ["events", [webhookGroup]],
  [
    "accounts administered by a wallet (signing with SIGIL_PRIVATE_KEY or --keystore)",
    [chainSecuredGroup, "convert", "wallet create --sign", "key add --sign"],
  ],
];

function usage(): string {
  const rows = sections.map(([title, entries]) => {
    const lines = entries.map((e): [string, string] => {
      if (typeof e !== "string")
        return [`${e.name} ${e.commands.map((c) => c.name.slice(e.name.length + 1)).join("|")}`, e.summary];
      if (e === "wallet create --sign") return [e, "a wallet for the signer's ChainSecured account"];
      if (e === "key add --sign") return [e, "a usage key for the signer's ChainSecured account"];
      if (e === "profile") return ["profile set|show", profileGroup.summary];
      return [e, commands[e]?.summary ?? ""];
    });
    return { title, lines };
  });
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
    console.log(usage());
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
  const entry = Object.hasOwn(commands, command) ? commands[command] : undefined;
  if (!entry) {
    // One line, not the whole usage: what was typed, the nearest command, where the list is.
    console.error(`sigil: unknown command: ${command}${didYouMean(command, Object.keys(commands))} (sigil --help)`);
    return 2;
  }
  return entry.run(args);
}

process.exitCode = await main(process.argv.slice(2));
