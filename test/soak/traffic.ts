// The soak's clients: real ones, through @sigil/sdk (its retries after a 503's or 429's Retry-After,
// one Idempotency-Key per call sent again on each retry), with a `fetch` that records every attempt
// — its status, latency, error code, Retry-After, request ids, what it was charged, a run's
// receipt. The traffic is a mix of kinds (runs, signing runs, managed writes, reads, top-ups through
// the Stripe emulator, the account's webhook endpoints), for several accounts, sent closed-loop to
// measure capacity or open-loop (Poisson arrivals) at a share of it.
import { createHash, randomUUID } from "node:crypto";
import { receiptMessage } from "../../shared/receipt.ts";
import { computeCid } from "../../shared/cid.ts";
import {
  createSigilClient,
  SigilError,
  SigilNetworkError,
  SigilTimeoutError,
  topUp,
  type SigilClient,
} from "../../sdk/src/index.ts";
import type { SoakStack } from "./stack.ts";

/**
 * What a call is, for the report; `setup`, `probe` and `fault` calls (a fault's own: the edge kill's
 * runs, traffic.faultRun) are not part of the load.
 */
export type Kind = "run" | "sign" | "write" | "read" | "topup" | "webhook" | "probe" | "fault" | "setup";
export const LOAD_KINDS = ["run", "sign", "write", "read", "topup", "webhook"] as const;

/** A usage key's request that may do nothing but what `extra` grants. */
function usageKeyBody<T extends object>(name: string, extra: T) {
  return {
    name,
    description: "",
    can_create_groups: false,
    can_delete_groups: false,
    can_create_pkps: false,
    manage_ipfs_ids_in_groups: [] as string[],
    add_pkp_to_groups: [] as string[],
    remove_pkp_from_groups: [] as string[],
    execute_in_groups: [] as string[],
    ...extra,
  };
}

export type LoadKind = (typeof LOAD_KINDS)[number];

/** One HTTP exchange: with the edge, or (a top-up's card payment) with the Stripe emulator. */
export type Attempt = {
  call: number;
  kind: Kind;
  target: "edge" | "stripe";
  /** The endpoint, e.g. `sigil_action`, `billing/balance`, `webhooks/{id}/deliveries`. */
  op: string;
  account: string;
  /** 0 for a request's first attempt, 1… for the SDK's retries of it. */
  n: number;
  /** Milliseconds since the soak's clock started, when it was sent. */
  at: number;
  ms: number;
  /** 0: no answer (the connection failed or timed out). */
  status: number;
  code?: string;
  /** The Retry-After header, as sent. */
  retryAfter?: string;
  requestId?: string;
  /** Original-Request: the first attempt's request id, on retries and replays under an Idempotency-Key. */
  originalRequest?: string;
  replayed?: boolean;
  idempotencyKey?: string;
  /** X-Sigil-Charged-Cents, on metered answers. */
  chargedCents?: number;
  /**
   * A run's answer: `receipt`, the SHA-256 of its receipt's signed message (the receipt without its
   * signature and batch path, which a batch of receipts shares: shared/receipt.ts), which names it.
   */
  run?: {
    receipt?: string;
    receiptRequestId?: string;
    hasError: boolean;
    errorCode?: string;
    firstAttempt?: { request_id: string; outcome: string };
  };
  /** A network error's message. */
  error?: string;
};

/** A probe's outcome: served, refused at the edge's door for load (so it tried nothing), or failed. */
export type Probe = "served" | "edge_busy" | "failed";

/**
 * One logical call (an SDK method, or a whole top-up), with how it ended; `token`: a run's (what the
 * fetch target counts, and its Idempotency-Key) or a write's (the name of what it makes, unique).
 */
export type Call = {
  id: number;
  kind: Kind;
  op: string;
  account: string;
  at: number;
  ms: number;
  ok: boolean;
  code?: string;
  token?: string;
};

/** A top-up as the client made it; what Stripe did with it is in the emulator's events. */
export type TopUp = {
  account: string;
  paymentIntentId: string;
  amountCents: number;
  cards: string[];
  confirmed: boolean;
};

export class Recorder {
  readonly attempts: Attempt[] = [];
  readonly calls: Call[] = [];
  readonly topUps: TopUp[] = [];
  readonly t0 = performance.now();
  /** Calls under way now. */
  active = 0;
  /** Calls under way now, by kind. */
  readonly activeByKind = new Map<Kind, number>();
  /** Called with every attempt as it ends (answered or not). */
  readonly #watchers = new Set<(attempt: Attempt) => void>();
  #nextCall = 0;

  readonly api: string;

  constructor(api: string) {
    this.api = api;
  }

  now(): number {
    return performance.now() - this.t0;
  }

  /** Resolves with the first attempt to end from now on that `matches`, or undefined after `timeoutMs`. */
  nextAttempt(matches: (attempt: Attempt) => boolean, timeoutMs: number): Promise<Attempt | undefined> {
    return new Promise((resolve) => {
      const watch = (attempt: Attempt) => {
        if (!matches(attempt)) return;
        done(attempt);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      const done = (attempt: Attempt | undefined) => {
        clearTimeout(timer);
        this.#watchers.delete(watch);
        resolve(attempt);
      };
      this.#watchers.add(watch);
    });
  }

  #ended(attempt: Attempt): void {
    this.attempts.push(attempt);
    for (const watch of [...this.#watchers]) watch(attempt);
  }

  /** Runs `work` as one call of `kind`, given a fetch that records its attempts; records how it ended. */
  async call<T>(
    kind: Kind,
    op: string,
    account: string,
    work: (fetch: typeof globalThis.fetch, callId: number) => Promise<T>,
    token?: string,
  ): Promise<T | undefined> {
    const id = this.#nextCall++;
    const at = this.now();
    /** How many times each request of the call was sent: the same URL (and Idempotency-Key) again is a retry. */
    const sent = new Map<string, number>();
    const recording: typeof globalThis.fetch = async (input, init) => {
      const url = new URL(String(input instanceof Request ? input.url : input));
      const edge = url.href.startsWith(this.api);
      const headers = new Headers(init?.headers);
      const request = `${init?.method ?? "GET"} ${url.href} ${headers.get("idempotency-key") ?? ""}`;
      const n = sent.get(request) ?? 0;
      sent.set(request, n + 1);
      const attempt: Attempt = {
        call: id,
        kind,
        target: edge ? "edge" : "stripe",
        op: edge ? opOf(url.pathname) : `stripe ${url.pathname.replace(/pi_\w+/, "{id}")}`,
        account,
        n,
        at: this.now(),
        ms: 0,
        status: 0,
        ...(headers.get("idempotency-key") ? { idempotencyKey: headers.get("idempotency-key") as string } : {}),
      };
      const started = performance.now();
      try {
        const res = await fetch(input, init);
        const text = await res.text();
        attempt.ms = performance.now() - started;
        attempt.status = res.status;
        readAnswer(attempt, res.headers, text);
        this.#ended(attempt);
        return new Response([101, 204, 205, 304].includes(res.status) ? null : text, {
          status: res.status,
          statusText: res.statusText,
          headers: res.headers,
        });
      } catch (err) {
        attempt.ms = performance.now() - started;
        attempt.error =
          err instanceof Error
            ? `${err.name}: ${err.message}${err.cause instanceof Error ? ` (${err.cause.message})` : ""}`
            : String(err);
        this.#ended(attempt);
        throw err;
      }
    };
    this.active++;
    this.activeByKind.set(kind, (this.activeByKind.get(kind) ?? 0) + 1);
    try {
      const result = await work(recording, id);
      this.calls.push({ id, kind, op, account, at, ms: this.now() - at, ok: true, ...(token ? { token } : {}) });
      return result;
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      this.calls.push({
        id,
        kind,
        op,
        account,
        at,
        ms: this.now() - at,
        ok: false,
        code: typeof code === "string" ? code : String(err),
        ...(token ? { token } : {}),
      });
      return undefined;
    } finally {
      this.active--;
      this.activeByKind.set(kind, (this.activeByKind.get(kind) ?? 1) - 1);
    }
  }

  /** Whether an attempt of call `id` got no answer (its connection failed). */
  cut(id: number): boolean {
    for (let i = this.attempts.length - 1; i >= 0; i--) {
      const a = this.attempts[i]!;
      if (a.call === id && a.status === 0) return true;
    }
    return false;
  }
}

/**
 * How long a client keeps sending again, under the same Idempotency-Key, a run or write whose
 * connection failed (its edge was killed under it, edge_kill): past the SDK's own retries, the
 * edge's restart and the dead attempt's hold on the key (409 request_in_progress until its
 * idempotency lease lapses, 15 s) — what an application that must have its answer does.
 */
export const RECONNECT_FOR_MS = 60_000;

/**
 * `attempt` (one SDK call, its Idempotency-Key fixed by the caller) again while it ends without an
 * answer, or in request_in_progress after an attempt of the call got none (`cut`), for
 * RECONNECT_FOR_MS; any other outcome is the call's.
 */
async function reconnecting<T>(attempt: () => Promise<T>, cut: () => boolean): Promise<T> {
  const started = performance.now();
  for (let pause = 500; ; pause = Math.min(pause * 2, 4_000)) {
    try {
      return await attempt();
    } catch (err) {
      const noAnswer = err instanceof SigilNetworkError && !(err instanceof SigilTimeoutError);
      const stillHeld = err instanceof SigilError && err.code === "request_in_progress" && cut();
      if (!(noAnswer || stillHeld) || performance.now() - started > RECONNECT_FOR_MS) throw err;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** The endpoint of a path under /core/v1, ids left out. */
function opOf(pathname: string): string {
  return pathname
    .replace(/^\/core\/v1\//, "")
    .replace(/\/we_\w+/, "/{id}")
    .replace(/\/(dlv|evt)_\w+/, "/{id}");
}

function readAnswer(attempt: Attempt, headers: Headers, text: string): void {
  const h = (name: string) => headers.get(name) ?? undefined;
  const requestId = h("x-request-id");
  if (requestId) attempt.requestId = requestId;
  const original = h("original-request");
  if (original) attempt.originalRequest = original;
  if (h("idempotent-replayed") === "true") attempt.replayed = true;
  const retryAfter = h("retry-after");
  if (retryAfter !== undefined) attempt.retryAfter = retryAfter;
  const charged = h("x-sigil-charged-cents");
  if (charged !== undefined) attempt.chargedCents = Number(charged);
  let body: Record<string, any> | undefined;
  try {
    body = JSON.parse(text) as Record<string, any>;
  } catch {
    return;
  }
  if (attempt.target === "stripe") {
    if (body?.error?.code) attempt.code = String(body.error.code);
    return;
  }
  if (typeof body?.error?.code === "string" && attempt.status >= 400) attempt.code = body.error.code;
  if (attempt.op === "sigil_action" && attempt.status === 200 && body) {
    attempt.run = {
      hasError: body.has_error === true,
      ...(body.receipt ? { receipt: createHash("sha256").update(receiptMessage(body.receipt)).digest("hex") } : {}),
      ...(body.receipt?.request_id ? { receiptRequestId: String(body.receipt.request_id) } : {}),
      ...(body.error?.code ? { errorCode: String(body.error.code) } : {}),
      ...(body.first_attempt
        ? {
            firstAttempt: {
              request_id: String(body.first_attempt.request_id),
              outcome: String(body.first_attempt.outcome),
            },
          }
        : {}),
    };
  }
}

// --- accounts -------------------------------------------------------------------------------

/** A script that says it ran (the fetch target counts its token) and answers "hello". */
export const RUN_CODE = `async function main({ counter, token }) {
  await fetch(counter + "/count?token=" + token);
  return "hello";
}`;
/** The same, signing its token with the account's wallet. */
export const SIGN_CODE = `async function main({ counter, token, wallet }) {
  await fetch(counter + "/count?token=" + token);
  return await Sigil.Actions.signMessage({ pkpId: wallet, message: token });
}`;

export type SoakAccount = {
  name: string;
  apiKey: string;
  /** The master hash, 64 hex (the Ledger's name). */
  master: string;
  wallet: string;
  groupId: string;
  /** A usage key that may run in the group. */
  usageKey: string;
  webhookId: string;
};

export type Traffic = {
  recorder: Recorder;
  accounts: SoakAccount[];
  /** The account the fault probes use (not part of the load). */
  probe: SoakAccount;
  /** One call of `kind`, for a random account. */
  send(kind: LoadKind): Promise<void>;
  /** A hello run through the edge for the probe account, no retry: whether it succeeded, or was refused for load (503 edge_busy) before any work. */
  probeRun(): Promise<Probe>;
  /** A read through the edge for the probe account, no retry: likewise. */
  probeRead(): Promise<Probe>;
  /**
   * A hello run for the probe account, of kind `fault` (a fault's own: the edge kill's), sent again
   * under its Idempotency-Key after a lost connection as the load's runs are.
   */
  faultRun(): Promise<void>;
  /** A top-up whose card is declined, then paid on the same intent, never confirmed by the client (the webhook must credit it). */
  declinedThenPaid(account?: SoakAccount): Promise<void>;
  /** How many wallets, groups and usage keys of each name the account has (the chain's lists, read through the edge). */
  namesOnChain(account: SoakAccount): Promise<Map<string, number>>;
  /** The account's balance read through the edge with its master key (which commits what the edge's isolate has pending for it), not recorded. */
  balance(account: SoakAccount): Promise<number>;
};

const INITIAL_CREDIT_CENTS = 1_000_000;

/** Makes the accounts (credit, a wallet in a group with both scripts, a usage key, a webhook endpoint) and the traffic on them. */
export async function startTraffic(
  stack: SoakStack,
  options: { accounts: number; log?: (line: string) => void },
): Promise<Traffic> {
  const recorder = new Recorder(stack.api);
  const [runCid, signCid] = await Promise.all([computeCid(RUN_CODE), computeCid(SIGN_CODE)]);
  const clientOf = (apiKey: string | undefined, fetch: typeof globalThis.fetch, retries = 3): SigilClient =>
    createSigilClient({
      baseUrl: stack.api,
      ...(apiKey ? { apiKey } : {}),
      fetch,
      retries,
      maxRetryDelayMs: 30_000,
      timeoutMs: 120_000,
    });
  const must = async <T>(
    what: string,
    account: string,
    work: (client: (key?: string) => SigilClient) => Promise<T>,
  ): Promise<T> => {
    let failure: unknown;
    const result = await recorder.call("setup", what, account, async (fetch) => {
      try {
        return await work((key) => clientOf(key, fetch, 5));
      } catch (err) {
        failure = err;
        throw err;
      }
    });
    if (result === undefined)
      throw new Error(
        `soak setup: ${what} for ${account} failed: ${failure instanceof Error ? failure.message : String(failure)}`,
      );
    return result;
  };

  const makeAccount = async (name: string): Promise<SoakAccount> => {
    const created = await must("new_account", name, (c) => c().newAccount({ account_name: name }));
    const apiKey = created.api_key;
    // The endpoint first, so that every payment of the account, its first too, is told to it.
    const hook = await must("create_webhook", name, (c) => c(apiKey).createWebhook({ url: stack.receiver.url(name) }));
    stack.receiver.setSecret(name, hook.secret);
    await must("top_up", name, (c) => topUp(c(apiKey), { amountCents: INITIAL_CREDIT_CENTS }));
    const { wallet_address: wallet } = await must("create_wallet", name, (c) => c(apiKey).createWallet({}));
    const { group_id: groupId } = await must("add_group", name, (c) =>
      c(apiKey).addGroup({
        group_name: "soak",
        group_description: "",
        pkp_ids_permitted: [wallet],
        cid_hashes_permitted: [runCid, signCid],
      }),
    );
    const { usage_api_key: usageKey } = await must("add_usage_api_key", name, (c) =>
      c(apiKey).addUsageApiKey(usageKeyBody("runner", { execute_in_groups: [groupId] })),
    );
    return {
      name,
      apiKey,
      master: created.account_id.replace(/^0x/, ""),
      wallet,
      groupId,
      usageKey,
      webhookId: hook.id,
    };
  };

  // The accounts at once: each waits for its writes' blocks, not for the others'.
  const made = await Promise.all(
    ["probe", ...Array.from({ length: options.accounts }, (_, i) => `soak-${i}`)].map(async (name) => {
      const account = await makeAccount(name);
      options.log?.(`account ${account.name} ready (${account.master.slice(0, 12)}…)`);
      return account;
    }),
  );
  const probe = made[0] as SoakAccount;
  const accounts = made.slice(1);

  // Probes never overlap (faults.ts): the last probe call is the one just made.
  const probeOutcome = (served: boolean): Probe => {
    if (served) return "served";
    const last = recorder.calls.findLast((c) => c.kind === "probe");
    return last?.code === "edge_busy" ? "edge_busy" : "failed";
  };

  const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;
  const byName = (name: string) => [...accounts, probe].find((a) => a.name === name) as SoakAccount;

  const run = (kind: "run" | "sign" | "probe" | "fault", a: SoakAccount, retries = 3) => {
    const token = randomUUID();
    const code = kind === "sign" ? SIGN_CODE : RUN_CODE;
    // Half the runs with the account's usage key, half with its master key.
    const key = kind !== "probe" && Math.random() < 0.5 ? a.usageKey : a.apiKey;
    return recorder.call(
      kind,
      "sigil_action",
      a.name,
      async (fetch, id) => {
        const send = () =>
          clientOf(key, fetch, retries).sigilAction(
            { code, js_params: { counter: stack.counterUrl, token, wallet: a.wallet } },
            { idempotencyKey: token },
          );
        // The probes never retry (faults.ts counts their attempts).
        const answer = kind === "probe" ? await send() : await reconnecting(send, () => recorder.cut(id));
        if (answer.has_error)
          throw Object.assign(new Error(answer.error?.message ?? "the run failed"), {
            code: answer.error?.code ?? "script_error",
          });
        return answer;
      },
      token,
    );
  };

  // Each write names what it makes with a name of its own, so the chain tells how many times it acted;
  // its Idempotency-Key is the client's, the same on every attempt (also those after a lost connection).
  const write = (a: SoakAccount) => {
    const r = Math.random();
    const name = `w-${randomUUID()}`;
    const once = { idempotencyKey: randomUUID() };
    const writing = (op: string, send: (client: SigilClient) => Promise<unknown>) =>
      recorder.call(
        "write",
        op,
        a.name,
        (fetch, id) =>
          reconnecting(
            () => send(clientOf(a.apiKey, fetch)),
            () => recorder.cut(id),
          ),
        name,
      );
    if (r < 0.5) return writing("create_wallet", (c) => c.createWallet({ name }, once));
    if (r < 0.8)
      return writing("add_group", (c) =>
        c.addGroup({ group_name: name, group_description: "", pkp_ids_permitted: [], cid_hashes_permitted: [] }, once),
      );
    return writing("add_usage_api_key", (c) => c.addUsageApiKey(usageKeyBody(name, { spend_limit_cents: 100 }), once));
  };

  const read = (a: SoakAccount) => {
    const reads: Array<[string, (c: SigilClient) => Promise<unknown>]> = [
      ["list_wallets", (c) => c.listWallets({ page_size: 10 })],
      ["billing/balance", (c) => c.getBalance()],
      ["usage", (c) => c.listUsage({ limit: 20 })],
      ["list_groups", (c) => c.listGroups({ page_size: 10 })],
      ["list_api_keys", (c) => c.listApiKeys({ page_size: 10 })],
    ];
    const [op, go] = pick(reads);
    return recorder.call("read", op, a.name, (fetch) => go(clientOf(a.apiKey, fetch)));
  };

  const webhook = (a: SoakAccount) =>
    Math.random() < 0.5
      ? recorder.call("webhook", "webhooks", a.name, (fetch) => clientOf(a.apiKey, fetch).listWebhooks())
      : recorder.call("webhook", "webhooks/{id}/deliveries", a.name, (fetch) =>
          clientOf(a.apiKey, fetch).listWebhookDeliveries({ webhook_id: a.webhookId, page_size: 10 }),
        );

  /** Pays an intent at the Stripe emulator as a browser would (the publishable key and the client secret). */
  const pay = async (
    fetch: typeof globalThis.fetch,
    intent: { payment_intent_id: string; client_secret: string },
    card: string,
    config: { api_base?: string; publishable_key: string },
  ) => {
    const res = await fetch(`${config.api_base}/v1/payment_intents/${intent.payment_intent_id}/confirm`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${config.publishable_key}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ payment_method: card, client_secret: intent.client_secret }).toString(),
    });
    return res.ok;
  };

  /** A top-up paid with `cards` in turn (until one is accepted); confirm_payment after, or left to Stripe's webhook. */
  const topUpWith = (
    a: SoakAccount,
    cards: string[],
    confirm: boolean,
    amountCents = 500 + 100 * Math.floor(Math.random() * 16),
  ) =>
    recorder.call("topup", confirm ? "top-up (confirm_payment)" : "top-up (webhook only)", a.name, async (fetch) => {
      const client = clientOf(a.apiKey, fetch);
      const config = (await client.getStripeConfig()) as { api_base?: string; publishable_key: string };
      const intent = await client.createPaymentIntent({ amount_cents: amountCents });
      const record: TopUp = {
        account: a.name,
        paymentIntentId: intent.payment_intent_id,
        amountCents,
        cards: [],
        confirmed: false,
      };
      recorder.topUps.push(record);
      let paid = false;
      for (const card of cards) {
        record.cards.push(card);
        if ((paid = await pay(fetch, intent, card, config))) break;
      }
      if (paid && confirm) {
        await client.confirmPayment({ payment_intent_id: intent.payment_intent_id });
        record.confirmed = true;
      }
      if (!paid) throw Object.assign(new Error("declined"), { code: "card_declined" });
    });

  const topUpOnce = (a: SoakAccount) => {
    const r = Math.random();
    // The SDK's own topUp, as `sigil topup` and the dashboard pay.
    if (r < 0.4) {
      return recorder.call("topup", "top-up (sdk)", a.name, async (fetch) => {
        const amountCents = 500 + 100 * Math.floor(Math.random() * 16);
        const done = await topUp(clientOf(a.apiKey, fetch), { amountCents, fetch });
        recorder.topUps.push({
          account: a.name,
          paymentIntentId: done.paymentIntentId,
          amountCents,
          cards: ["pm_card_visa"],
          confirmed: true,
        });
      });
    }
    if (r < 0.7) return topUpWith(a, ["pm_card_visa"], false);
    if (r < 0.9) return topUpWith(a, ["pm_card_chargeDeclined", "pm_card_visa"], Math.random() < 0.5);
    return topUpWith(a, ["pm_card_chargeDeclined"], false);
  };

  return {
    recorder,
    accounts,
    probe,
    async send(kind) {
      const a = pick(accounts);
      if (kind === "run" || kind === "sign") await run(kind, a);
      else if (kind === "write") await write(a);
      else if (kind === "read") await read(a);
      else if (kind === "topup") await topUpOnce(a);
      else await webhook(a);
    },
    probeRun: async () => probeOutcome((await run("probe", probe, 0)) !== undefined),
    async faultRun() {
      await run("fault", probe);
    },
    probeRead: async () =>
      probeOutcome(
        (await recorder.call("probe", "billing/balance", probe.name, (fetch) =>
          clientOf(probe.apiKey, fetch, 0).getBalance(),
        )) !== undefined,
      ),
    async declinedThenPaid(account) {
      await topUpWith(
        account ? byName(account.name) : pick(accounts),
        ["pm_card_chargeDeclined", "pm_card_visa"],
        false,
      );
    },
    async balance(a) {
      const client = createSigilClient({ baseUrl: stack.api, apiKey: a.apiKey, retries: 5 });
      return (await client.getBalance()).balance_cents;
    },
    async namesOnChain(a) {
      const client = createSigilClient({ baseUrl: stack.api, apiKey: a.apiKey, retries: 5 });
      const names = new Map<string, number>();
      const count = (name: string) => names.set(name, (names.get(name) ?? 0) + 1);
      for await (const w of client.all.listWallets()) count(w.name);
      for await (const g of client.all.listGroups()) count(g.group_name);
      for await (const k of client.all.listApiKeys()) count(k.name);
      return names;
    },
  };
}

/** The mix of the load, by weight. */
export const MIX: Record<LoadKind, number> = { run: 40, sign: 20, read: 22, write: 10, topup: 4, webhook: 4 };

export function pickKind(mix: Record<LoadKind, number> = MIX): LoadKind {
  const total = LOAD_KINDS.reduce((s, k) => s + mix[k], 0);
  let r = Math.random() * total;
  for (const k of LOAD_KINDS) {
    r -= mix[k];
    if (r < 0) return k;
  }
  return "read";
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `concurrency` clients each sending the mix back to back for `durationMs`: calls per second completed. */
export async function measureCapacity(
  traffic: Traffic,
  options: { concurrency: number; durationMs: number },
): Promise<{ callsPerSecond: number; calls: number; seconds: number }> {
  const end = performance.now() + options.durationMs;
  let calls = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (performance.now() < end) {
        await traffic.send(pickKind());
        calls++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { callsPerSecond: calls / seconds, calls, seconds };
}

/**
 * Open-loop arrivals: calls start at `rate` per second on average (exponential gaps), whether or
 * not earlier ones have ended, for `durationMs`; at most `maxInFlight` at once (an arrival over it
 * is shed and counted). Resolves when every call started has ended.
 */
export async function driveOpenLoop(
  traffic: Traffic,
  options: { rate: number; durationMs: number; maxInFlight: number; stopped?: () => boolean },
): Promise<{ started: number; shed: number }> {
  const inFlight = new Set<Promise<void>>();
  let started = 0;
  let shed = 0;
  const t0 = performance.now();
  let next = t0;
  while (performance.now() - t0 < options.durationMs && !options.stopped?.()) {
    const now = performance.now();
    while (next <= now) {
      next += (-Math.log(1 - Math.random()) / options.rate) * 1000;
      if (inFlight.size >= options.maxInFlight) {
        shed++;
        continue;
      }
      started++;
      const p = traffic.send(pickKind()).finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
    await sleep(Math.max(1, Math.min(50, next - performance.now())));
  }
  await Promise.all(inFlight);
  return { started, shed };
}
