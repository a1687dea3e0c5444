// Guardrail templates (docs/design/guardrails.md, "Templates"): the common cases as functions from a
// few typed parameters to a document — a treasury that pays listed recipients under a cap, a trading
// bot that calls one router, a signer of one protocol's EIP-712 data, a login key that signs
// sign-in messages only. Each is in the registry with its parameters as a zod schema whose
// metadata (title, description, example) is what `sigil guardrail template` lists and the
// dashboard's form shows, and both fill a template the same way (fillTemplate): the parameters as
// text — a list comma-separated — checked, each problem named by its parameter, then the document
// made and checked as the API will check it (guardrailDocumentSchema).
import { parseAbiItem } from "viem";
import { z } from "zod";
import { guardrailDocumentSchema } from "./evaluate.ts";
import type { Guardrail, GuardrailInput } from "./schema.ts";

/** The two ERC-20 functions the templates allow, as the document writes them. */
export const ERC20_TRANSFER = "function transfer(address to, uint256 amount)";
export const ERC20_APPROVE = "function approve(address spender, uint256 amount)";

/** What the parameters' metadata may say besides zod's title and description. */
type ParamMeta = { title: string; description: string; example?: string; multiline?: boolean };
const meta = <T extends z.ZodType>(schema: T, m: ParamMeta): T => schema.meta(m);

const MAX_LIST = 64;
const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte address")
  .transform((a) => a.toLowerCase());
const addresses = z.array(address).min(1).max(MAX_LIST);
const amount = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, "must be a whole number, e.g. 1000000000000000000");
const chainId = z
  .number()
  .int()
  .positive("must be a chain id, 1 or more")
  .max(2 ** 53 - 1);
const chainIds = z.array(chainId).min(1).max(MAX_LIST);

/** A Solidity function signature, "function " added when left out; one viem cannot parse is refused with its reason. */
const signature = z
  .string()
  .trim()
  .transform((s) => (s.startsWith("function ") ? s : `function ${s}`))
  .superRefine((s, ctx) => {
    try {
      const item = parseAbiItem(s);
      if (item.type !== "function") throw new Error("not a function");
    } catch (err) {
      ctx.addIssue({
        code: "custom",
        message: `${JSON.stringify(s)} is not a Solidity function signature (${(err as Error).message.split("\n")[0]})`,
      });
    }
  });

/** A template: its name, what it is for, its parameters, and the document it makes from them. */
export type GuardrailTemplate<S extends z.ZodObject = z.ZodObject> = {
  name: string;
  summary: string;
  params: S;
  make(params: z.output<S>): GuardrailInput;
};

const DAY_SECONDS = 86_400;

const template = <S extends z.ZodObject>(t: GuardrailTemplate<S>) => t;

// ——— treasury ———

const treasuryParams = z
  .object({
    chains: meta(chainIds, {
      title: "Chains",
      description: "the chain ids its transactions may name",
      example: "1,8453",
    }),
    recipients: meta(addresses, {
      title: "Recipients",
      description: "the only addresses it may pay, in ether and in the tokens",
      example: "0x…,0x…",
    }),
    max_value_wei: meta(amount, {
      title: "Most wei per transaction",
      description: "the most ether one transaction may send, in wei (1 ETH = 1000000000000000000)",
      example: "500000000000000000",
    }),
    tokens: meta(addresses.optional(), {
      title: "ERC-20 tokens",
      description: "token contracts whose transfer(to, amount) it may call, to the recipients only",
      example: "0xa0b8…",
    }),
    max_token_amount: meta(amount.optional(), {
      title: "Most tokens per transfer",
      description: "with tokens: the most one transfer may move, in the token's base units (1000000 = 1 USDC)",
      example: "1000000",
    }),
    daily_cap_wei: meta(amount.optional(), {
      title: "Most wei a day",
      description:
        "the most ether all its transactions together may send in any 24 hours, in wei; left out, no daily cap",
      example: "2000000000000000000",
    }),
  })
  .superRefine((p, ctx) => {
    if (p.tokens && p.max_token_amount === undefined)
      ctx.addIssue({
        code: "custom",
        path: ["max_token_amount"],
        message: "is required with tokens: the most one token transfer may move",
      });
    if (!p.tokens && p.max_token_amount !== undefined)
      ctx.addIssue({ code: "custom", path: ["tokens"], message: "is required with max_token_amount" });
  });

export const treasuryTemplate = template({
  name: "treasury",
  summary:
    "pays listed recipients only: ether up to a cap per transaction and, optionally, a day; ERC-20 transfers up to a cap",
  params: treasuryParams,
  make: (p) => ({
    version: 1,
    name: "treasury",
    description: "Payments to the listed recipients only, each under its cap; nothing else.",
    transactions: {
      chains: p.chains,
      max_value_wei: p.max_value_wei,
      transfers: { allow: p.recipients },
      ...(p.tokens
        ? {
            contracts: p.tokens.map((token) => ({
              address: token,
              functions: [
                {
                  signature: ERC20_TRANSFER,
                  args: { to: { in: p.recipients }, amount: { lte: p.max_token_amount ?? "0" } },
                },
              ],
            })),
          }
        : {}),
    },
    ...(p.daily_cap_wei === undefined
      ? {}
      : { budgets: [{ name: "daily", window_seconds: DAY_SECONDS, max_value_wei: p.daily_cap_wei }] }),
  }),
});

// ——— trading bot ———

const tradingBotParams = z
  .object({
    chain: meta(chainId, { title: "Chain", description: "the one chain it trades on", example: "8453" }),
    router: meta(address, {
      title: "Router",
      description: "the router contract, the only contract it may call",
      example: "0x…",
    }),
    functions: meta(z.array(signature).min(1).max(MAX_LIST), {
      title: "Router functions",
      description:
        "the router's functions it may call, as Solidity declares them with argument names (one per line, or comma-separated)",
      example: '"swap(address tokenIn, uint256 amountIn, uint256 minOut)"',
      multiline: true,
    }),
    max_value_wei: meta(amount.optional(), {
      title: "Most wei per trade",
      description: "the most ether a call to the router may send, in wei; left out, none",
      example: "100000000000000000",
    }),
    daily_cap_wei: meta(amount.optional(), {
      title: "Most wei a day",
      description: "the most ether all its trades together may send in any 24 hours, in wei; left out, no daily cap",
      example: "1000000000000000000",
    }),
    max_trades_per_day: meta(z.number().int().min(1).max(1_000_000).optional(), {
      title: "Most trades a day",
      description: "the most transactions it may sign in any 24 hours; left out, no limit",
      example: "100",
    }),
    tokens: meta(addresses.optional(), {
      title: "Tokens to approve",
      description: "ERC-20 tokens whose approve(spender, amount) it may call, with the router as the only spender",
      example: "0x…,0x…",
    }),
  })
  .superRefine((p, ctx) => {
    if (p.tokens?.includes(p.router))
      ctx.addIssue({ code: "custom", path: ["tokens"], message: "must not list the router itself" });
  });

export const tradingBotTemplate = template({
  name: "trading-bot",
  summary:
    "calls one router's listed functions on one chain, optionally approving it on listed tokens, with per-trade and daily caps; no plain transfers",
  params: tradingBotParams,
  make: (p) => ({
    version: 1,
    name: "trading-bot",
    description: "Trades through one router on one chain; no transfers, no other contract.",
    transactions: {
      chains: [p.chain],
      contracts: [
        {
          address: p.router,
          functions: p.functions.map((s) => ({ signature: s })),
          ...(p.max_value_wei === undefined ? {} : { max_value_wei: p.max_value_wei }),
        },
        ...(p.tokens ?? []).map((token) => ({
          address: token,
          functions: [{ signature: ERC20_APPROVE, args: { spender: { eq: p.router } } }],
        })),
      ],
    },
    ...(p.daily_cap_wei === undefined && p.max_trades_per_day === undefined
      ? {}
      : {
          budgets: [
            {
              name: "daily",
              window_seconds: DAY_SECONDS,
              ...(p.daily_cap_wei === undefined ? {} : { max_value_wei: p.daily_cap_wei }),
              ...(p.max_trades_per_day === undefined ? {} : { max_signatures: p.max_trades_per_day }),
            },
          ],
        }),
  }),
});

// ——— typed-data signer ———

const typedDataParams = z.object({
  domain_name: meta(z.string().min(1).max(256), {
    title: "Domain name",
    description: "the EIP-712 domain's name the protocol signs under",
    example: "Permit2",
  }),
  chain: meta(chainId, { title: "Chain", description: "the domain's chain id", example: "1" }),
  verifying_contract: meta(address, {
    title: "Verifying contract",
    description: "the domain's verifying contract",
    example: "0x000000000022d473030f116ddee9f6b43ac78ba3",
  }),
  primary_types: meta(
    z
      .array(z.string().regex(/^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/, "must be a type name, e.g. PermitSingle"))
      .min(1)
      .max(MAX_LIST),
    { title: "Primary types", description: "the primary types it may sign", example: "PermitSingle,PermitBatch" },
  ),
  domain_version: meta(z.string().min(1).max(64).optional(), {
    title: "Domain version",
    description: "the domain's version, when the protocol names one; left out, any",
    example: "1",
  }),
});

export const typedDataTemplate = template({
  name: "typed-data",
  summary: "signs one protocol's EIP-712 data only (its domain and primary types): no transactions, no messages",
  params: typedDataParams,
  make: (p) => ({
    version: 1,
    name: "typed-data",
    description: `EIP-712 data of ${p.domain_name} only.`,
    typed_data: p.primary_types.map((primary_type) => ({
      domain: {
        name: p.domain_name,
        ...(p.domain_version === undefined ? {} : { version: p.domain_version }),
        chain_id: p.chain,
        verifying_contract: p.verifying_contract,
      },
      primary_type,
    })),
  }),
});

// ——— login ———

const loginParams = z
  .object({
    domain: meta(
      z
        .string()
        .regex(/^[A-Za-z0-9.-]+(:\d{1,5})?$/, "must be a host name, e.g. example.com")
        .optional(),
      {
        title: "Site",
        description:
          'the site it signs in to: Sign-In with Ethereum (EIP-4361) messages, "<site> wants you to sign in with your Ethereum account:…"',
        example: "example.com",
      },
    ),
    pattern: meta(z.string().min(1).max(1024).optional(), {
      title: "Pattern",
      description: 'instead of a site: the text a message must match, "*" for any run of characters',
      example: '"Log in to example.com: *"',
    }),
  })
  .superRefine((p, ctx) => {
    if ((p.domain === undefined) === (p.pattern === undefined))
      ctx.addIssue({
        code: "custom",
        path: [p.domain === undefined ? "domain" : "pattern"],
        message: p.domain === undefined ? "is required (or pattern)" : "cannot be given with domain: one or the other",
      });
  });

/** The start of a Sign-In with Ethereum message for `domain` (EIP-4361), and anything after it. */
export const siwePattern = (domain: string) => `${domain} wants you to sign in with your Ethereum account:*`;

export const loginTemplate = template({
  name: "login",
  summary: "signs sign-in messages only (Sign-In with Ethereum for one site, or a pattern): nothing else",
  params: loginParams,
  make: (p) => ({
    version: 1,
    name: "login",
    description: "Sign-in messages only.",
    messages: { pattern: p.pattern ?? siwePattern(p.domain ?? "") },
  }),
});

// ——— the registry ———

/** Every template, in the order they are listed. */
export const guardrailTemplates: readonly GuardrailTemplate[] = [
  treasuryTemplate,
  tradingBotTemplate,
  typedDataTemplate,
  loginTemplate,
] as unknown as readonly GuardrailTemplate[];

export function templateNamed(name: string): GuardrailTemplate | undefined {
  return guardrailTemplates.find((t) => t.name === name);
}

/** A parameter of a template, as a form or a command line shows it. */
export type TemplateParam = {
  /** Its key in the params object: max_value_wei. */
  name: string;
  /** As a command-line option, without the dashes: max-value-wei. */
  option: string;
  title: string;
  description: string;
  example: string | undefined;
  required: boolean;
  /** A list: given comma-separated (or one per line). */
  list: boolean;
  /** Whole numbers (chain ids), else text. */
  type: "number" | "string";
  /** Its values are long (function signatures): a text area, one per line. */
  multiline: boolean;
};

/** The schema inside optional and pipe wrappers, and whether it was optional. */
function inner(schema: z.ZodType): { schema: z.ZodType; optional: boolean } {
  let s = schema;
  let optional = false;
  for (;;) {
    if (s instanceof z.ZodOptional || s instanceof z.ZodDefault) {
      optional = true;
      s = s.unwrap() as z.ZodType;
    } else if (s instanceof z.ZodPipe) s = s.in as z.ZodType;
    else return { schema: s, optional };
  }
}

/** A template's parameters, in order, from its schema and the metadata on each. */
export function paramsOf(template: GuardrailTemplate): TemplateParam[] {
  return Object.entries(template.params.shape).map(([name, field]) => {
    const m = (z.globalRegistry.get(field as z.ZodType) ?? {}) as Partial<ParamMeta>;
    const { schema, optional } = inner(field as z.ZodType);
    const list = schema instanceof z.ZodArray;
    const element = list ? inner(schema.element as z.ZodType).schema : schema;
    return {
      name,
      option: name.replace(/_/g, "-"),
      title: m.title ?? name,
      description: m.description ?? "",
      example: m.example,
      required: !optional,
      list,
      type: element instanceof z.ZodNumber ? "number" : "string",
      multiline: m.multiline === true,
    };
  });
}

/**
 * A list as typed: items separated by commas or new lines outside parentheses (so a function
 * signature's own commas stay in it), each trimmed, empty ones dropped.
 */
export function splitList(text: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    else if (ch === ")") depth = Math.max(0, depth - 1);
    if ((ch === "," && depth === 0) || ch === "\n") {
      items.push(current);
      current = "";
      if (ch === "\n") depth = 0;
    } else current += ch;
  }
  items.push(current);
  return items.map((i) => i.trim()).filter((i) => i !== "");
}

/** What is wrong with one parameter (`param` its name; "" for the document as a whole). */
export type TemplateProblem = { param: string; message: string };

export type Filled =
  | { document: Guardrail; params: Record<string, unknown>; problems?: undefined }
  | { document?: undefined; params?: undefined; problems: TemplateProblem[] };

/**
 * Fills `template` from its parameters as text (by name; absent or blank: not given; lists
 * comma-separated): the document, checked as the API checks it, or each problem by parameter.
 */
export function fillTemplate(template: GuardrailTemplate, raw: Record<string, string | undefined>): Filled {
  const problems: TemplateProblem[] = [];
  const values: Record<string, unknown> = {};
  for (const p of paramsOf(template)) {
    const text = raw[p.name]?.trim();
    if (!text) {
      if (p.required) problems.push({ param: p.name, message: "is required" });
      continue;
    }
    const items = p.list ? splitList(text) : [text];
    if (p.type === "number") {
      const bad = items.find((i) => !/^\d{1,16}$/.test(i));
      if (bad !== undefined) {
        problems.push({ param: p.name, message: `must be a whole number, not ${JSON.stringify(bad)}` });
        continue;
      }
      values[p.name] = p.list ? items.map(Number) : Number(text);
    } else values[p.name] = p.list ? items : text;
  }
  if (problems.length) return { problems };
  const parsed = template.params.safeParse(values);
  if (!parsed.success) {
    return {
      problems: parsed.error.issues.map((issue) => {
        const [param, index] = issue.path;
        const item = typeof index === "number" ? `item ${index + 1} ` : "";
        return { param: String(param ?? ""), message: `${item}${issue.message}` };
      }),
    };
  }
  const made = guardrailDocumentSchema.safeParse(template.make(parsed.data));
  if (!made.success)
    return {
      problems: made.error.issues.map((issue) => ({
        param: "",
        message: `the document: ${issue.path.join(".")}: ${issue.message}`,
      })),
    };
  return { document: made.data, params: parsed.data as Record<string, unknown> };
}
