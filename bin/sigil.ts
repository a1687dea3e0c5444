// The `sigil` command. `sigil start` runs the local stack until Ctrl-C (npm start); more
// subcommands (verifier, account tools) join as the service grows.
import { startLocalStack } from "./stack/start.ts";

const usage = `usage: node bin/sigil.ts <command>

commands:
  start    run the local stack: anvil (unless SIGIL_RPC_URL is set) and AccountConfig, until Ctrl-C`;

const [command] = process.argv.slice(2);
switch (command) {
  case "start":
    process.exitCode = await startLocalStack();
    break;
  case undefined:
  case "help":
  case "--help":
    console.log(usage);
    break;
  default:
    console.error(`unknown command: ${command}\n\n${usage}`);
    process.exitCode = 2;
}
