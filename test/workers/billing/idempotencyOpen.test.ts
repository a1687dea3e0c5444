// Idempotency-Key on the writes that take no API key (docs/reference/api.md, Idempotency keys): new_account, kept
// per client address, and the signature endpoints, kept per signing wallet — through the edge in
// workerd against the real chain and enclave. A repeat replays the first answer (the same account
// and key; the same derivation), with nothing done again; another body is 422; one in flight is
// 409; a malformed key is 400; a replay spends none of the hourly new_account budget; a retry whose
// first attempt reached the enclave gets the account that attempt made; the answers kept hold no
// readable secret. The billing writes' keys are payments.test.ts's.
import { env, listDurableObjectIds, runInDurableObject, SELF } from "cloudflare:test";
import type { Address, Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { describe, expect, inject, it } from "vitest";
import { buildTypedData, signableTypedData, type SigilPrimaryType } from "../../../shared/eip712.ts";
import { accountConfigAbi } from "../../../shared/generated/accountConfigAbi.ts";
import { apiKeyHash, toHash32, walletLookupHash } from "../../../shared/hashing.ts";
import { createApp } from "../../../workers/app.ts";
import type { Env } from "../../../workers/env.ts";
import { GAS_BUDGET_BUCKET } from "../../../workers/middleware/rateLimit/index.ts";
import { chain, edgeClient, type Reply } from "../stack.ts";
import { billingLedgers, ledgerRows } from "./ledgers.ts";

const { edge, expectError } = edgeClient(SELF);
const ledgers = (env as unknown as Env).LEDGER!;
billingLedgers({
  self: SELF,
  namespace: ledgers,
  listIds: () => listDurableObjectIds(ledgers),
  rows: (stub) => runInDurableObject(stub, ledgerRows),
});
const idempotency = (env as unknown as Env).IDEMPOTENCY!;

let n = 0;
/** A fresh, unguessable key, as clients are told to use. */
const idem = () => crypto.randomUUID();
/** A client address of its own per test, as the edge sees it (CF-Connecting-IP). */
const address = () => `198.51.100.${(n++ % 250) + 1}`;

async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

type NewAccount = { api_key: string; account_id: string; wallet_address: string; transaction_hash: string };

const newAccount = (body: unknown, headers: Record<string, string>) =>
  edge<NewAccount>("new_account", { body, headers });

/** How many accounts the chain has made in the blocks after `block`. */
async function accountsCreatedSince(block: bigint): Promise<number> {
  const logs = await chain().getContractEvents({
    address: inject("contract"),
    abi: accountConfigAbi,
    eventName: "AccountCreated",
    fromBlock: block,
  });
  return logs.filter((l) => l.blockNumber > block).length;
}

/** Everything a record store holds, as text. */
function storeText(object: string): Promise<string> {
  const stub = idempotency.get(idempotency.idFromName(object));
  return runInDurableObject(stub, (_o, state) =>
    JSON.stringify([
      state.storage.sql.exec("SELECT * FROM records").toArray(),
      state.storage.sql.exec("SELECT * FROM answer_chunks").toArray(),
    ]),
  );
}

/** The object new_account's records of client address `ip` are kept in. */
const newAccountObject = async (ip: string) => `new_account:${await sha256Hex(ip)}`;

describe("new_account with an Idempotency-Key", () => {
  it("sent again with the same body answers the same account and key (Idempotent-Replayed, the first request's id): one account on chain; none of it is kept readable", async () => {
    const ip = address();
    const k = idem();
    const body = { account_name: "idem new account", account_description: "once" };
    const from = await chain().getBlockNumber();
    const first = await newAccount(body, { "idempotency-key": k, "cf-connecting-ip": ip });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    // Field order does not matter.
    const again = await newAccount(
      { account_description: "once", account_name: "idem new account" },
      { "idempotency-key": k, "cf-connecting-ip": ip },
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("original-request")).toBe(first.headers.get("x-request-id"));
    expect(await accountsCreatedSince(from)).toBe(1);
    expect(first.body.account_id).toBe(toHash32(apiKeyHash(first.body.api_key)));
    // The key works: it is the account's master key.
    expect((await edge<{ exists: boolean }>("account_exists", { key: again.body.api_key })).body).toEqual({
      exists: true,
      managed: true,
    });
    // Sealed: neither the new key nor the Idempotency-Key is in the store.
    const stored = await storeText(await newAccountObject(ip));
    expect(stored).toContain(await sha256Hex(k));
    expect(stored).not.toContain(first.body.api_key);
    expect(stored).not.toContain(k);
    // Without the header the same body is a new account.
    const other = await newAccount(body, { "cf-connecting-ip": ip });
    expect(other.body.account_id).not.toBe(first.body.account_id);
  });

  it("sent again with another body is 422 idempotency_key_reused and makes nothing", async () => {
    const ip = address();
    const k = idem();
    expect((await newAccount({ account_name: "a" }, { "idempotency-key": k, "cf-connecting-ip": ip })).status).toBe(
      200,
    );
    const from = await chain().getBlockNumber();
    expectError(
      await newAccount({ account_name: "b" }, { "idempotency-key": k, "cf-connecting-ip": ip }),
      422,
      "idempotency_key_reused",
    );
    expect(await accountsCreatedSince(from)).toBe(0);
  });

  it("is the client address's own: another address sending the same key and body makes its own account", async () => {
    const k = idem();
    const body = { account_name: "shared key" };
    const mine = await newAccount(body, { "idempotency-key": k, "cf-connecting-ip": address() });
    const theirs = await newAccount(body, { "idempotency-key": k, "cf-connecting-ip": address() });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(theirs.body.api_key).not.toBe(mine.body.api_key);
  });

  it("a malformed key is 400 invalid_request and makes nothing", async () => {
    const from = await chain().getBlockNumber();
    for (const bad of ["", "two words", "x".repeat(256)]) {
      expectError(
        await newAccount({ account_name: "bad key" }, { "idempotency-key": bad, "cf-connecting-ip": address() }),
        400,
        "invalid_request",
      );
    }
    expect(await accountsCreatedSince(from)).toBe(0);
  });

  it("sent while an attempt under the key is in flight is 409 request_in_progress with Retry-After", async () => {
    const ip = address();
    const body = { account_name: "in flight" };
    await newAccount(body, { "idempotency-key": "model", "cf-connecting-ip": ip });
    const busy = idem();
    // An attempt holding the key's lease, beside the model's record (so with its fingerprint).
    await runInDurableObject(idempotency.get(idempotency.idFromName(await newAccountObject(ip))), async (_o, state) => {
      const sql = state.storage.sql;
      const { fingerprint } = sql
        .exec<{ fingerprint: string }>(
          "SELECT fingerprint FROM records WHERE scope = ?",
          `client:${await sha256Hex("model")}`,
        )
        .one();
      sql.exec(
        "INSERT INTO records (scope, fingerprint, ref, state, owner, lease_until, created_at) VALUES (?, ?, 'elsewhere', 'in_progress', 'elsewhere', ?, ?)",
        `client:${await sha256Hex(busy)}`,
        fingerprint,
        Date.now() + 60_000,
        Date.now(),
      );
    });
    const from = await chain().getBlockNumber();
    const r = await newAccount(body, { "idempotency-key": busy, "cf-connecting-ip": ip });
    expectError(r, 409, "request_in_progress");
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await accountsCreatedSince(from)).toBe(0);
  });

  it("retried after its edge died with the first attempt at the enclave: the enclave answers the account that attempt made, and makes no second", async () => {
    const ip = address();
    const k = idem();
    const body = { account_name: "edge died" };
    const from = await chain().getBlockNumber();
    const first = await newAccount(body, { "idempotency-key": k, "cf-connecting-ip": ip });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // As if the edge had died before it could keep that answer: the record in flight, its lease lapsed.
    await runInDurableObject(idempotency.get(idempotency.idFromName(await newAccountObject(ip))), async (_o, state) => {
      state.storage.sql.exec(
        "UPDATE records SET state = 'in_progress', owner = 'gone', lease_until = 0 WHERE scope = ?",
        `client:${await sha256Hex(k)}`,
      );
      state.storage.sql.exec("DELETE FROM answer_chunks");
    });
    const retried = await newAccount(body, { "idempotency-key": k, "cf-connecting-ip": ip });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body).toEqual(first.body);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect(retried.headers.get("original-request")).toBe(first.headers.get("x-request-id"));
    expect(await accountsCreatedSince(from)).toBe(1);
  });

  it("a replay spends none of the deployment's hourly new_account budget (the per-address limit still counts it); a first attempt and a request without a key do", async () => {
    // The edge app with a RateLimiter that notes each bucket it is asked for (one request each).
    const asked: string[] = [];
    const limiter = {
      idFromName: (name: string) => name,
      get: (name: string) => ({
        lease: async (limit: number, windowSeconds: number) => {
          asked.push(name);
          return { granted: 1, limit, remaining: limit, windowEndMs: Date.now() + windowSeconds * 1000 };
        },
      }),
    };
    const app = createApp();
    const appEnv = { ...(env as unknown as Env), RATE_LIMITER: limiter as never };
    const ip = address();
    const call = async (body: unknown, headers: Record<string, string> = {}) => {
      asked.length = 0;
      const res = await app.request(
        "http://edge/core/v1/new_account",
        {
          method: "POST",
          headers: { "content-type": "application/json", "cf-connecting-ip": ip, ...headers },
          body: JSON.stringify(body),
        },
        appEnv,
      );
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), asked: [...asked] };
    };
    const k = idem();
    expect(await call({ account_name: "budget" }, { "idempotency-key": k })).toMatchObject({
      status: 200,
      replayed: null,
      asked: expect.arrayContaining([GAS_BUDGET_BUCKET]),
    });
    const replay = await call({ account_name: "budget" }, { "idempotency-key": k });
    expect(replay).toMatchObject({ status: 200, replayed: "true" });
    expect(replay.asked).toContain(`open-ip:${ip}`);
    expect(replay.asked).not.toContain(GAS_BUDGET_BUCKET);
    const reused = await call({ account_name: "another" }, { "idempotency-key": k });
    expect(reused.status).toBe(422);
    expect(reused.asked).not.toContain(GAS_BUDGET_BUCKET);
    expect((await call({ account_name: "no key" })).asked).toContain(GAS_BUDGET_BUCKET);
  });
});

// --- the signature endpoints --------------------------------------------------------------------

const CHAIN_ID = 31337;
const now = () => Math.floor(Date.now() / 1000);

async function signed(
  primaryType: SigilPrimaryType,
  signer: PrivateKeyAccount,
  issuedAt = now(),
): Promise<{ typed_data: unknown; signature: Hex }> {
  const typedData = buildTypedData({ primaryType, address: signer.address, chainId: CHAIN_ID, issuedAt });
  return { typed_data: typedData, signature: await signer.signTypedData(signableTypedData(typedData)) };
}

const signedCall = <T>(path: string, envelope: unknown, key?: string): Promise<Reply<T>> =>
  edge<T>(path, {
    body: envelope,
    headers: { "cf-connecting-ip": address(), ...(key === undefined ? {} : { "idempotency-key": key }) },
  });

/** The object a wallet's signature-endpoint records are kept in: its lookup hash's. */
const walletObject = (wallet: Address) => walletLookupHash(wallet).toString(16).padStart(64, "0");

type Derived = { wallet_address: string; derivation_path: string };
type UsageKey = Derived & { usage_api_key: string; usage_api_key_hash: string };

describe("the signature endpoints with an Idempotency-Key", () => {
  it("create_wallet_with_signature sent again answers the same wallet and derivation path; without a key each call derives a new one", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const envelope = await signed("CreateWallet", signer);
    const k = idem();
    const first = await signedCall<Derived>("create_wallet_with_signature", envelope, k);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await signedCall<Derived>("create_wallet_with_signature", envelope, k);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("original-request")).toBe(first.headers.get("x-request-id"));
    expect((await signedCall<Derived>("create_wallet_with_signature", envelope)).body.derivation_path).not.toBe(
      first.body.derivation_path,
    );
  });

  it("add_usage_api_key_with_signature sent again answers the same usage key and wallet, kept sealed; another body is 422; another wallet's same key is its own", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    const issuedAt = now();
    const envelope = await signed("AddUsageApiKey", signer, issuedAt);
    const k = idem();
    const first = await signedCall<UsageKey>("add_usage_api_key_with_signature", envelope, k);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const again = await signedCall<UsageKey>("add_usage_api_key_with_signature", envelope, k);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const stored = await storeText(walletObject(signer.address));
    expect(stored).toContain(await sha256Hex(k));
    expect(stored).not.toContain(first.body.usage_api_key);
    expect(stored).not.toContain(k);
    // A new signature is another body: another issuedAt than the first's, whatever the clock says now
    // (signatures are deterministic, so the same issuedAt would be the same body).
    expectError(
      await signedCall("add_usage_api_key_with_signature", await signed("AddUsageApiKey", signer, issuedAt - 1), k),
      422,
      "idempotency_key_reused",
    );
    const other = privateKeyToAccount(generatePrivateKey());
    const theirs = await signedCall<UsageKey>(
      "add_usage_api_key_with_signature",
      await signed("AddUsageApiKey", other),
      k,
    );
    expect(theirs.status).toBe(200);
    expect(theirs.body.usage_api_key).not.toBe(first.body.usage_api_key);
  });

  it("replays after the signature's issuedAt window has passed (the check ran once, on the first attempt); a refused signature keeps nothing", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    // Valid for about 3 more seconds (±300 s).
    const envelope = await signed("CreateWallet", signer, now() - 297);
    const k = idem();
    const first = await signedCall<Derived>("create_wallet_with_signature", envelope, k);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await new Promise((r) => setTimeout(r, 4_500));
    expectError(await signedCall("create_wallet_with_signature", envelope), 401, "signature_expired");
    const again = await signedCall<Derived>("create_wallet_with_signature", envelope, k);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    // An expired signature under a fresh key is refused, and leaves that key free.
    const late = idem();
    expectError(await signedCall("create_wallet_with_signature", envelope, late), 401, "signature_expired");
    const fresh = await signed("CreateWallet", signer);
    expect((await signedCall("create_wallet_with_signature", fresh, late)).status).toBe(200);
  });

  it("a malformed key is 400 invalid_request", async () => {
    const signer = privateKeyToAccount(generatePrivateKey());
    expectError(
      await signedCall("create_wallet_with_signature", await signed("CreateWallet", signer), "two words"),
      400,
      "invalid_request",
    );
    expectError(
      await signedCall("add_usage_api_key_with_signature", await signed("AddUsageApiKey", signer), ""),
      400,
      "invalid_request",
    );
  });
});
