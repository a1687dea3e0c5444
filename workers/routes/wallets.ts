// Wallets (docs/design/api.md, Wallets). Creation is forwarded to an enclave, which derives the wallet and
// authorizes the caller (the master key, or a usage key with can_create_pkps); lists are live
// eth_calls from here — each wallet with its Solana address, which only the enclave can derive and
// the edge keeps once told (enclave/solanaAddresses.ts) — and so is a wallet's balance on the
// deployment's chain (get_wallet_balance).
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { z } from "zod";
import type { Address } from "viem";
import { SigilError } from "../../shared/errors.ts";
import { requestSchemas, responseSchemas } from "../../shared/operations.ts";
import { newRouter, pipeline, type EdgeEnv } from "../router.ts";
import { nativeBalance } from "../chain/balance.ts";
import { readView } from "../chain/client.ts";
import { solanaAddressesOf } from "../enclave/solanaAddresses.ts";
import { callerKey } from "../middleware/auth/index.ts";
import { operationBodyLimit } from "../middleware/bodyLimit/index.ts";
import { jsonResponse as json, listRoute, registerKeySecurity, requireApiKey, requireKey, route } from "./openapi.ts";
import { groupIdParam, pageArgs, pageQuerySchema, pageAnswer } from "./paging.ts";
import { idempotencyHeaders, idempotentAnswerHeaders } from "../idempotency/index.ts";
import { chargedHeader, forwardWrite, writeStages } from "./write.ts";
import { accountRead } from "./accountRead.ts";

/** `listWalletsInGroup`'s id for the group's `address(0)` entry: any wallet of the account. */
const ANY_WALLET_ID = (1n << 256n) - 1n;
/** How that entry's `id` reads in a response. */
export const ANY_WALLET = "any";

const createWalletBody = requestSchemas.create_wallet.omit({ api_key: true });

const createWalletPost = route("POST /create_wallet", "Wallets", {
  summary: "Create a wallet (PKP) for the caller's account",
  security: "key",
  middleware: [operationBodyLimit("create_wallet"), requireKey],
  request: {
    headers: idempotencyHeaders,
    body: { required: false, content: { "application/json": { schema: createWalletBody } } },
  },
  ok: { ...json(responseSchemas.create_wallet), headers: chargedHeader },
  errors: [400, 401, 402, 403, 408, 409, 413, 422, 429, 503],
});

const createWalletGet = route("GET /create_wallet", "Wallets", {
  // The specification's alias of POST /create_wallet, under a name of its own for the SDK.
  operationId: "createWalletByGet",
  summary: "Deprecated: use POST /create_wallet",
  deprecated: true,
  security: "key",
  // A write by GET: a delegated key, which may GET, may not call it.
  middleware: [requireApiKey],
  request: { headers: idempotencyHeaders },
  ok: {
    ...json(responseSchemas.create_wallet),
    headers: z.object({
      Deprecation: z.string(),
      Link: z.string(),
      "X-Sigil-Charged-Cents": z.string(),
      ...idempotentAnswerHeaders,
    }),
  },
  errors: [400, 401, 402, 403, 409, 422, 429, 503],
});

const walletItem = z
  .object({
    id: z
      .string()
      .describe(
        `the wallet id (decimal; 0 is the Account Master Wallet), or "${ANY_WALLET}" for a group's any-wallet entry`,
      ),
    wallet_address: z.string().describe("lowercase; the zero address for the any-wallet entry"),
    solana_address: z
      .string()
      .nullable()
      .describe(
        "the wallet's Solana address (base58 of the Ed25519 key derived beside its EVM key); null for the any-wallet entry, and when the enclave could not be asked for it (ask again)",
      ),
    name: z.string(),
    description: z.string(),
  })
  .openapi("Wallet");

const listWallets = listRoute({
  name: "list_wallets",
  tag: "Wallets",
  summary: "The account's wallets",
  query: pageQuerySchema,
  item: walletItem,
});

const listWalletsInGroup = listRoute({
  name: "list_wallets_in_group",
  tag: "Wallets",
  summary: "The wallets a group permits",
  query: pageQuerySchema.extend({ group_id: groupIdParam }),
  item: walletItem,
  notFound: true,
});

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

const walletBalance = z
  .object({
    wallet_address: z.string().describe("lowercase"),
    chain_id: z.number().describe("the deployment's chain (get_node_chain_config)"),
    balance_wei: z.string().describe("the native balance in wei, decimal"),
    balance_eth: z.string().describe('the same in ether, decimal, without trailing zeros ("0", "1.5")'),
    block_number: z.string().describe("the block the balance was read at, decimal"),
  })
  .openapi("WalletBalance");

const getWalletBalance = route("GET /get_wallet_balance", "Wallets", {
  summary: "A wallet's native balance on the deployment's chain, at the latest block; the wallet must be the account's",
  security: "key",
  middleware: [requireKey],
  request: {
    query: z.object({
      wallet_address: z
        .string()
        .regex(ADDRESS, "must be a 0x-prefixed 20-byte address")
        .openapi({
          param: { name: "wallet_address", in: "query" },
          description: "one of the account's wallets (list_wallets)",
          example: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
        }),
    }),
  },
  ok: json(walletBalance),
  // 400: the address, or two different keys; 401: the key; 404: not a wallet of the account.
  errors: [400, 401, 404, 429, 503],
});

type WalletView = { id: bigint; wallet: string; name: string; description: string };

/** A page of wallets as the lists answer them, each with its Solana address (enclave/solanaAddresses.ts). */
async function walletPage(
  c: Context<EdgeEnv>,
  page: readonly [readonly WalletView[], bigint],
): Promise<readonly [z.infer<typeof walletItem>[], bigint]> {
  const [views, total] = page;
  const wallets = views.filter((w) => w.id !== ANY_WALLET_ID).map((w) => w.wallet.toLowerCase());
  const solana = wallets.length > 0 ? await solanaAddressesOf(c, wallets) : new Map<string, string>();
  const items = views.map((w) => ({
    id: w.id === ANY_WALLET_ID ? ANY_WALLET : w.id.toString(),
    wallet_address: w.wallet.toLowerCase(),
    solana_address: w.id === ANY_WALLET_ID ? null : (solana.get(w.wallet.toLowerCase()) ?? null),
    name: w.name,
    description: w.description,
  }));
  return [items, total];
}

export function walletsRoutes(): OpenAPIHono<EdgeEnv> {
  const r = newRouter();
  registerKeySecurity(r);

  r.openapi(
    createWalletPost,
    pipeline<typeof createWalletPost>(writeStages("create_wallet"), async (c) =>
      c.json(await forwardWrite(c, "create_wallet", c.req.valid("json")), 200),
    ),
  );

  r.openapi(
    createWalletGet,
    pipeline<typeof createWalletGet>(writeStages("create_wallet"), async (c) => {
      const wallet = await forwardWrite(c, "create_wallet", {});
      c.header("Deprecation", "true");
      c.header("Link", '</core/v1/create_wallet>; rel="successor-version"');
      return c.json(wallet, 200);
    }),
  );

  r.openapi(listWallets, async (c) => {
    const { keyHash } = callerKey(c);
    return pageAnswer(
      c,
      await walletPage(
        c,
        await accountRead(c, `listWallets|${keyHash}|${JSON.stringify(c.req.query())}`, () =>
          readView(c.get("config"), "listWallets", [keyHash, ...pageArgs(c.req.valid("query"))], keyHash),
        ),
      ),
      (item) => item,
    );
  });

  r.openapi(getWalletBalance, async (c) => {
    const { keyHash } = callerKey(c);
    const config = c.get("config");
    const address = c.req.valid("query").wallet_address.toLowerCase() as Address;
    // A registered wallet's derivation is never 0; 0 means it is not this account's.
    const derivation = await readView(config, "getWalletDerivation", [keyHash, address], keyHash);
    if (derivation === 0n) throw new SigilError("wallet_not_found", `${address} is not a wallet of this account`);
    const balance = await nativeBalance(config, address);
    return c.json(
      {
        wallet_address: address,
        chain_id: config.chainId,
        balance_wei: balance.wei.toString(),
        balance_eth: balance.ether,
        block_number: balance.blockNumber.toString(),
      },
      200,
    );
  });

  r.openapi(listWalletsInGroup, async (c) => {
    const { keyHash } = callerKey(c);
    const query = c.req.valid("query");
    return pageAnswer(
      c,
      await walletPage(
        c,
        await accountRead(c, `listWalletsInGroup|${keyHash}|${JSON.stringify(c.req.query())}`, () =>
          readView(c.get("config"), "listWalletsInGroup", [keyHash, query.group_id, ...pageArgs(query)], keyHash),
        ),
      ),
      (item) => item,
    );
  });

  return r;
}
