#!/usr/bin/env node
// The `sigil` command (`npm run -s sigil -- <command>`): `start` runs the local stack until Ctrl-C
// (npm start); `topup` buys credit for an account; `verify` checks a deployment's attestation;
// `edge-identity` makes the edge's channel identity for a deployment.
import { topUpCommand, topUpUsage } from "./account/topup.ts";
import { edgeIdentityCommand, edgeIdentityUsage } from "./identity/edgeIdentity.ts";
import { startLocalStack } from "./stack/start.ts";
import { verifyCommand, verifyUsage } from "./verify/verify.ts";

const usage = `usage: npm run -s sigil -- <command>   (or: node bin/sigil.ts <command>, on Node 24)

commands:
  start    run the local stack (anvil unless SIGIL_RPC_URL is set, AccountConfig, the enclave, the
           local Stripe unless STRIPE_SECRET_KEY is set, and the API on :8787) until Ctrl-C
  topup    buy credit for an account with a Stripe test card
  verify   check a deployment: its quote, event log, /info, evidences, TLS, governance
  edge-identity  make the edge's channel identity (a secret seed and the public key enclaves allow)

${topUpUsage}

${verifyUsage}

${edgeIdentityUsage}`;

const [command, ...args] = process.argv.slice(2);
switch (command) {
  case "start":
    process.exitCode = await startLocalStack();
    break;
  case "topup":
    process.exitCode = await topUpCommand(args);
    break;
  case "verify":
    process.exitCode = await verifyCommand(args);
    break;
  case "edge-identity":
    process.exitCode = await edgeIdentityCommand(args);
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
