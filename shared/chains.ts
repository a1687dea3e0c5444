// The chains a deployment sends transactions to (docs/design/transactions.md, Chains): one setting
// that the enclaves (which send) and the edge (whose Transactions objects follow) read alike.
import { z } from "zod";

/**
 * A deployment's chains, as its SIGIL_CHAINS setting names them (enclave and edge alike): JSON
 * {"<chain id>": "<RPC URL>"}; empty or unset is undefined (the contract's own chain only). A
 * Worker's variable may arrive parsed already (wrangler passes a JSON variable as its object).
 */
export const chainsSetting = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .optional()
  .transform((text, ctx): Map<number, string> | undefined => {
    if (text === undefined || (typeof text === "string" && text.trim() === "")) return undefined;
    let parsed: unknown = text;
    if (typeof text === "string")
      try {
        parsed = JSON.parse(text);
      } catch {
        ctx.addIssue({ code: "custom", message: 'must be JSON: {"<chain id>": "<RPC URL>"}' });
        return z.NEVER;
      }
    const chains = z.record(z.string().regex(/^[1-9][0-9]{0,15}$/), z.url({ protocol: /^https?$/ })).safeParse(parsed);
    if (!chains.success) {
      ctx.addIssue({ code: "custom", message: 'must map chain ids to http(s) RPC URLs: {"8453": "https://…"}' });
      return z.NEVER;
    }
    return new Map(Object.entries(chains.data).map(([id, url]) => [Number(id), url]));
  });
