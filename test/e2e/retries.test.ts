// Retries with an Idempotency-Key across process deaths (issue 11's acceptance; docs/design/api.md,
// Idempotency keys; docs/design/billing.md): the edge under wrangler dev with billing on — its Durable Objects
// persisted in a state folder, so they outlive its process — in front of the test stack's chain
// and enclave, with credit bought from the local Stripe emulator.
//
// - A write whose edge is killed (SIGKILL of its process group) while the enclave waits for the
//   write's block, retried with its key once the edge is back: one group on chain, the answer is
//   that group's, one cent charged.
// - A run whose enclave is killed mid-run, retried with its key once the enclave is back: the
//   retry runs, the key is charged once (the first attempt, which never answered, not at all), and
//   the answer says what became of the first attempt.
// - A run answered by an edge that is killed before its charge's commit: the enclave that ran it
//   settles the charge itself, once, with the run's receipt (docs/design/billing.md, Leases).
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { topUp } from "../harness/topUp.ts";
import { freePort, spawnEdge, type EdgeProcess } from "../../bin/stack/edge.ts";
import { DEV_APP_COMPOSE_PATH } from "../../deploy/release.ts";
import { TEST_EDGE_IDENTITY_SEED } from "../enclave/constants.ts";
import { startStripeEmulator, type StripeEmulator } from "../../emulators/stripe.ts";
import { startTestStack, type TestStack } from "../harness/stack.ts";

let stack: TestStack;
let stripe: StripeEmulator;
let edge: EdgeProcess;
let port: number;
const stateDir = mkdtempSync(join(tmpdir(), "sigil-retries-"));

function startEdge(): Promise<EdgeProcess> {
  return spawnEdge({
    port,
    stateDir,
    vars: {
      SIGIL_ENV: "development",
      SIGIL_BILLING: "on",
      SIGIL_ENCLAVE_URLS: stack.enclaveUrl,
      SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
      SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
      SIGIL_ALLOWED_COMPOSE_HASHES: createHash("sha256").update(readFileSync(DEV_APP_COMPOSE_PATH)).digest("hex"),
      SIGIL_RPC_URL: stack.rpcUrl,
      SIGIL_PUBLIC_RPC_URL: stack.rpcUrl,
      SIGIL_CHAIN_ID: "31337",
      SIGIL_CHAIN_NAME: "anvil",
      SIGIL_CONTRACT_ADDRESS: stack.contract,
      STRIPE_SECRET_KEY: stripe.secretKey,
      STRIPE_PUBLISHABLE_KEY: stripe.publishableKey,
      STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
      STRIPE_API_BASE: stripe.url,
      // A run's charge waits this long in the edge's lease before its commit: long enough for the
      // last test to kill the edge between a run's answer and its commit.
      SIGIL_LEASE_COMMIT_DELAY_MS: "2000",
    },
  });
}

beforeAll(async () => {
  stack = await startTestStack();
  stripe = await startStripeEmulator();
  port = await freePort();
  edge = await startEdge();
}, 180_000);

afterAll(async () => {
  await edge?.stop();
  await stripe?.stop();
  await stack?.stop();
  rmSync(stateDir, { recursive: true, force: true });
});

type Answer = { status: number; headers: Headers; body: Record<string, unknown> };

async function call(
  path: string,
  options: { key?: string; body?: unknown; idempotencyKey?: string } = {},
): Promise<Answer> {
  const res = await fetch(`${edge.url}/core/v1/${path}`, {
    method: options.body === undefined ? "GET" : "POST",
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(options.key ? { "x-api-key": options.key } : {}),
      ...(options.idempotencyKey ? { "idempotency-key": options.idempotencyKey } : {}),
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/**
 * Sends a request again while its key answers 409 request_in_progress, waiting as Retry-After says.
 * `onWaiting` is called once an attempt has not answered for a while (a 409 comes back at once).
 */
async function retry(
  path: string,
  options: { key: string; body: unknown; idempotencyKey: string },
  onWaiting?: () => Promise<void>,
): Promise<Answer> {
  for (let i = 0; ; i++) {
    const pending = call(path, options);
    let r = await Promise.race([pending, new Promise<undefined>((resolve) => setTimeout(resolve, 3000))]);
    if (r === undefined) {
      await onWaiting?.();
      r = await pending;
    }
    if (!(r.status === 409 && (r.body.error as { code?: string }).code === "request_in_progress")) return r;
    if (i > 20) throw new Error(`${path} stayed in progress: ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, Number(r.headers.get("retry-after")) * 1000));
  }
}

async function rpc<T>(method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(stack.rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: unknown };
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result as T;
}

async function until(what: string, check: () => Promise<boolean>, tries = 400): Promise<void> {
  for (let i = 0; !(await check()); i++) {
    if (i > tries) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function newPayingAccount(name: string): Promise<{ key: string; balance(): Promise<number> }> {
  const created = await call("new_account", { body: { account_name: name } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const key = created.body.api_key as string;
  await topUp({ api: `${edge.url}/core/v1`, key, amountCents: 500 });
  return { key, balance: async () => (await call("billing/balance", { key })).body.balance_cents as number };
}

it("a write retried with its Idempotency-Key after the edge was killed mid-request acts once and is charged once", async () => {
  const { key, balance } = await newPayingAccount("edge killed");
  expect(await balance()).toBe(500);
  const group = { group_name: "made once", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] };
  const idempotencyKey = "add-group-made-once";

  // The enclave sends the write and waits for its block, which does not come while automine is off.
  await rpc("evm_setAutomine", [false]);
  try {
    const lost = call("add_group", { key, body: group, idempotencyKey }).catch((err: unknown) => err);
    await until(
      "the enclave sent the write",
      async () => Object.keys((await rpc<{ pending: object }>("txpool_content")).pending).length > 0,
    );
    process.kill(-edge.pid, "SIGKILL");
    await edge.exited;
    expect(await lost).toBeInstanceOf(Error);
    // What the killed edge held: its hold of the write's cent.
    edge = await startEdge();
    expect(await balance()).toBe(499);

    // The retry waits out the dead attempt's lease, then goes to the same enclave process, which
    // still waits for the write's block: it joins that write; the block is mined once the retry
    // waits on it (had it come sooner, the enclave would answer with the write's kept outcome).
    const answer = await retry("add_group", { key, body: group, idempotencyKey }, async () => {
      await rpc("evm_setAutomine", [true]);
      await rpc("evm_mine");
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.headers.get("idempotent-replayed")).toBe("true");
    expect(answer.headers.get("original-request")).toMatch(/^[0-9a-f-]{36}$/);
    expect(answer.headers.get("x-sigil-charged-cents")).toBe("1");

    const groups = (await call("list_groups?page_size=100", { key })).body as unknown as Array<{
      id: string;
      group_name: string;
    }>;
    expect(groups.filter((g) => g.group_name === "made once")).toEqual([
      expect.objectContaining({ id: answer.body.group_id }),
    ]);
    expect(await balance()).toBe(499);
    // Once more: the kept answer, nothing sent, nothing charged.
    const again = await call("add_group", { key, body: group, idempotencyKey });
    expect(again.body).toEqual(answer.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await balance()).toBe(499);
    expect(((await call("list_groups?page_size=100", { key })).body as unknown as unknown[]).length).toBe(1);
  } finally {
    await rpc("evm_setAutomine", [true]);
  }
});

it("a run retried with its Idempotency-Key after the enclave was killed mid-run is charged once, and its answer says the first attempt was interrupted", async () => {
  const { key, balance } = await newPayingAccount("enclave killed");
  const anyAction = await call("add_group", {
    key,
    body: { group_name: "any", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: ["0"] },
  });
  expect(anyAction.status, JSON.stringify(anyAction.body)).toBe(200);
  const before = await balance();
  const run = { code: "async function main() { await new Promise((r) => setTimeout(r, 4000)); return 'ran' }" };
  const idempotencyKey = "run-after-enclave-died";

  const first = call("sigil_action", { key, body: run, idempotencyKey });
  // The run has held its credit and been sent; a moment later it is running in the enclave.
  await until("the run held its credit", async () => (await balance()) < before);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await stack.restartEnclave({ start: false });
  const interrupted = await first;
  expect(interrupted.status, JSON.stringify(interrupted.body)).toBe(503);
  expect((interrupted.body.error as { code: string }).code).toBe("enclave_unavailable");
  expect(await balance()).toBe(before);

  await stack.startEnclave();
  const answer = await retry("sigil_action", { key, body: run, idempotencyKey });
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  expect(answer.body.response).toBe("ran");
  expect(answer.body.first_attempt).toEqual({
    request_id: interrupted.headers.get("x-request-id"),
    outcome: "interrupted",
    message: expect.stringMatching(/not charged/),
  });
  expect(answer.headers.get("original-request")).toBe(interrupted.headers.get("x-request-id"));
  const charged = answer.body.charged_cents as number;
  expect(charged).toBe(Math.ceil((answer.body.duration_ms as number) / 1000));
  expect(await balance()).toBe(before - charged);

  const again = await call("sigil_action", { key, body: run, idempotencyKey });
  expect(again.body).toEqual(answer.body);
  expect(again.headers.get("idempotent-replayed")).toBe("true");
  expect(await balance()).toBe(before - charged);
});

it("a run answered by an edge killed before its commit is charged by the enclave that ran it: its fee, once, with its receipt in /usage", async () => {
  const { key, balance } = await newPayingAccount("answered then killed");
  const anyAction = await call("add_group", {
    key,
    body: { group_name: "any", group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: ["0"] },
  });
  expect(anyAction.status, JSON.stringify(anyAction.body)).toBe(200);
  // Read through the edge: the group's charge is committed.
  const before = await balance();
  const run = await call("sigil_action", { key, body: { code: "async function main() { return 'ran' }" } });
  expect(run.status, JSON.stringify(run.body)).toBe(200);
  expect(run.headers.get("x-sigil-charged-cents")).toBe("1");
  // Answered; its charge waits SIGIL_LEASE_COMMIT_DELAY_MS in the isolate's lease, and the edge dies.
  process.kill(-edge.pid, "SIGKILL");
  await edge.exited;
  edge = await startEdge();
  // The enclave sends the run's charge a few seconds after it ended (enclave/receipts/settlements.ts).
  await until("the enclave settled the run", async () => (await balance()) === before - 1, 600);
  const usage = (await call("usage?kind=run", { key })).body as { events: Array<Record<string, unknown>> };
  const row = usage.events.find((e) => e.request_id === run.headers.get("x-request-id"));
  expect(row).toMatchObject({ charged_cents: 1, hold_expired: false, receipt: run.body.receipt });
  // And no more: the dead isolate's lease, when it expires, finds the run charged.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect(await balance()).toBe(before - 1);
});
