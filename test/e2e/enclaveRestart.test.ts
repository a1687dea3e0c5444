// The edge in front of an enclave that crashes and comes back (docs/design/attestation.md, Channel): the
// edge under wrangler dev (workerd, its real verifier of channel quotes) and an enclave that is
// killed with SIGKILL, as a crashed CVM would be. While it is down, a write gets 503
// enclave_unavailable with Retry-After — never an answer it did not get — and once it is back with a
// new channel key, the next request succeeds without an error: the edge hears unknown_channel_key,
// verifies the new key's quote, opens a new session and sends the request once more.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, spawnEdge, type EdgeProcess } from "../../bin/stack/edge.ts";
import { DEV_APP_COMPOSE_PATH } from "../../deploy/release.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startTestStack, type TestStack } from "../harness/stack.ts";

let stack: TestStack;
let edge: EdgeProcess;
const stateDir = mkdtempSync(join(tmpdir(), "sigil-restart-"));

beforeAll(async () => {
  stack = await startTestStack();
  edge = await spawnEdge({
    port: await freePort(),
    stateDir,
    // The worker's own lines too: each "enclave channel key pinned" is a verified channel quote.
    logLevel: "log",
    vars: {
      SIGIL_ENV: "development",
      SIGIL_BILLING: "off",
      SIGIL_ENCLAVE_URLS: stack.enclaveUrl,
      SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
      SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
      SIGIL_ALLOWED_COMPOSE_HASHES: createHash("sha256").update(readFileSync(DEV_APP_COMPOSE_PATH)).digest("hex"),
      SIGIL_RPC_URL: stack.rpcUrl,
      SIGIL_PUBLIC_RPC_URL: stack.rpcUrl,
      SIGIL_CHAIN_ID: "31337",
      SIGIL_CHAIN_NAME: "anvil",
      SIGIL_CONTRACT_ADDRESS: stack.contract,
    },
  });
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await stack?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

async function post(
  path: string,
  body: unknown,
  key?: string,
): Promise<{ status: number; retryAfter: string | null; body: Record<string, unknown> }> {
  const res = await fetch(`${edge.url}/core/v1/${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { "x-api-key": key } : {}) },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: (await res.json()) as Record<string, unknown>,
  };
}

const pins = () =>
  edge
    .output()
    .split("\n")
    .filter((l) => l.includes("enclave channel key pinned")).length;

/** The count of pins once the edge's output has caught up (its lines arrive through a pipe, a little after its answers). */
async function pinsSoon(expected: number): Promise<number> {
  for (let i = 0; i < 40 && pins() < expected; i++) await new Promise((r) => setTimeout(r, 50));
  return pins();
}

it("a crashed enclave: 503 with Retry-After while it is down, then served again under its new key without a client-visible error", async () => {
  const created = await post("new_account", { account_name: "restart" });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const key = created.body.api_key as string;
  const run = () =>
    post("sigil_action", { code: "async function main(p) { return p.n * 2 }", js_params: { n: 21 } }, key);
  // Even the master key runs only actions a group lists: this one lists any action.
  const group = await post(
    "add_group",
    { group_name: "any", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: ["0"] },
    key,
  );
  expect(group.status, JSON.stringify(group.body)).toBe(200);
  expect((await run()).body.response).toBe(42);
  expect(await pinsSoon(1), edge.output().slice(-3000)).toBe(1);

  await stack.restartEnclave({ start: false });
  const down = await post(
    "add_group",
    { group_name: "while down", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
    key,
  );
  expect(down.status).toBe(503);
  expect((down.body.error as { code: string }).code).toBe("enclave_unavailable");
  expect(Number(down.retryAfter)).toBeGreaterThan(0);

  await stack.startEnclave();
  const after = await run();
  expect(after.status, JSON.stringify(after.body)).toBe(200);
  expect(after.body.response).toBe(42);
  // The new key was verified by the edge's own verifier before anything was sealed to it.
  expect(await pinsSoon(2), edge.output().slice(-3000)).toBe(2);
  const write = await post(
    "add_group",
    { group_name: "after", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] },
    key,
  );
  expect(write.status, JSON.stringify(write.body)).toBe(200);
});
