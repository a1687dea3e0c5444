// `sigil edge-identity`: makes the edge's channel identity for a deployment — a new Ed25519 seed,
// which the edge keeps as the secret SIGIL_EDGE_IDENTITY_KEY, and its public key, which the
// enclaves list in SIGIL_ALLOWED_EDGE_KEYS (docs/design/attestation.md, Channel). With --seed it
// prints only the public key of a seed the operator already has.
import { parseArgs } from "node:util";
import { edgeIdentityFromSeed, newEdgeIdentitySeed, toBase64Url } from "../../shared/channel/channel.ts";

export const edgeIdentityUsage = `usage: sigil edge-identity [--seed <64 hex>]
  Makes a new edge channel identity and prints two lines:
    SIGIL_EDGE_IDENTITY_KEY=<seed, 64 hex>   the secret: npx wrangler secret put SIGIL_EDGE_IDENTITY_KEY --env production
    SIGIL_ALLOWED_EDGE_KEYS=<public key>     for the release: npm run release -- … --set SIGIL_ALLOWED_EDGE_KEYS=<public key>
  --seed <64 hex>   print only the public key of this existing seed
  -h, --help        print this and exit`;

/** The lines `sigil edge-identity` prints: a new seed and its public key, or only the public key of `seed`. */
export async function edgeIdentityLines(seed?: string): Promise<string[]> {
  const own = seed ?? newEdgeIdentitySeed();
  const publicKey = `SIGIL_ALLOWED_EDGE_KEYS=${toBase64Url((await edgeIdentityFromSeed(own)).publicKey)}`;
  return seed === undefined ? [`SIGIL_EDGE_IDENTITY_KEY=${own}`, publicKey] : [publicKey];
}

/** The `sigil edge-identity` command; its exit code. */
export async function edgeIdentityCommand(args: string[]): Promise<number> {
  let seed: string | undefined;
  try {
    const { values } = parseArgs({
      args,
      options: { seed: { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false,
    });
    if (values.help) {
      console.log(edgeIdentityUsage);
      return 0;
    }
    seed = values.seed;
    if (seed !== undefined && !/^(0x)?[0-9a-fA-F]{64}$/.test(seed)) throw new Error("--seed takes 64 hex digits");
  } catch (err) {
    console.error(`sigil edge-identity: ${(err as Error).message}\n\n${edgeIdentityUsage}`);
    return 2;
  }
  for (const line of await edgeIdentityLines(seed)) console.log(line);
  return 0;
}
