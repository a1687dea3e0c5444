// One wallet (#/wallets/<address>): its balance on the deployment's chain (get_wallet_balance, a live
// eth_getBalance through the edge), what it may sign (its guardrail, in words: guardrail.tsx), the groups that let scripts use it (a group lists it, or lists
// "any wallet of the account"), and what runs did with it, from the runs' signed receipts in the
// usage history (GET /usage?wallet=): each signature's kind and digest, with the run's time, CID and
// request, and a "verified" mark once the SDK's walletHistory has checked its receipt (the instance's
// attested key) and found its batch in the root anchored on chain (read through the deployment's
// public RPC, get_node_chain_config). A receipt records the digest a signature was made over, not
// the signature itself (that is in the run's answer only), and the usage history keeps runs while
// billing is on, for 90 days.
import type { PageProps } from "../session.ts";
import type { PageItem, SigilClient, WalletSignature } from "../../../sdk/src/index.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { ago, Empty, ether, Hex, List, Load, Section, useLoad } from "../ui.tsx";
import { GuardrailSection } from "./guardrail.tsx";

type UsageEvent = PageItem<"listUsage">;
type Group = PageItem<"listGroups">;

const ANY_WALLET = "0x0000000000000000000000000000000000000000";
/** The runs read for the wallet's activity: the newest this many of the account's (or the key's). */
const MAX_RUNS = 500;
/** The runs whose signatures are listed and checked: the wallet's newest this many. */
const CHECKED_RUNS = 25;

/** A run that used the wallet: when, which script, what it signed, whether it read the private key. */
export type WalletRun = {
  time: string;
  cid: string;
  requestId: string;
  signatures: number;
  exported: boolean;
  failed: string | null;
};

/** The runs whose receipts say they used `address`, newest first. */
export function activityOf(events: UsageEvent[], address: string): { runs: WalletRun[] } {
  const runs: WalletRun[] = [];
  for (const e of events) {
    const receipt = e.receipt;
    if (e.kind !== "run" || !receipt) continue;
    const used = receipt.wallets.find((w) => !w.action && w.address === address.toLowerCase());
    if (!used) continue;
    runs.push({
      time: e.time,
      cid: receipt.cid,
      requestId: receipt.request_id,
      signatures: used.signed.length,
      exported: used.key_exported,
      failed: e.error_code,
    });
  }
  return { runs };
}

async function walletData(client: SigilClient, address: string) {
  const [wallets, balance, groups, events] = await Promise.all([
    collect(client.all.listWallets()),
    client.getWalletBalance({ wallet_address: address }),
    collect(client.all.listGroups()),
    collect(client.all.listUsage({ kind: "run", limit: 100 }), MAX_RUNS).catch(() => [] as UsageEvent[]),
  ]);
  const wallet = wallets.find((w) => w.wallet_address === address.toLowerCase());
  const inGroups = groups.filter((g) =>
    g.pkp_ids_permitted.some((w) => w === address.toLowerCase() || w === ANY_WALLET),
  );
  return { wallet, balance, groups: inGroups, events, ...activityOf(events, address) };
}

/** The wallet's newest signatures, each with its checks (walletHistory), through the deployment's public RPC. */
async function checkedSignatures(client: SigilClient, address: string): Promise<WalletSignature[]> {
  // Loaded with the page's first check: the chain client and the checks stay out of the first visit.
  const [{ rpc_url }, { walletHistory }] = await Promise.all([
    client.getNodeChainConfig(),
    import("../../../sdk/src/walletHistory.ts"),
  ]);
  const out: WalletSignature[] = [];
  for await (const s of walletHistory(client, { wallet: address, rpcUrl: rpc_url, maxRuns: CHECKED_RUNS })) out.push(s);
  return out;
}

/** An entry's checks in words: verified, pending (its anchor not on chain yet), or what failed. */
function Checked({ s }: { s: WalletSignature }) {
  const { checks } = s;
  if (s.verified)
    return (
      <span
        class="good"
        title={`receipt verified; anchored on chain at ${new Date((checks.anchoredAt ?? 0) * 1000).toLocaleString()}`}
      >
        ✓ verified
      </span>
    );
  if (checks.receipt === "failed")
    return (
      <span class="bad" title={checks.detail}>
        ✗ receipt failed
      </span>
    );
  const anchored = {
    pending: "anchor pending",
    failed: "✗ anchor failed",
    not_checked: "anchor not checked",
    none: "not anchored by its instance",
    verified: "anchored ✓",
  }[checks.anchored];
  // Unpinned: signed by an attested key, of code (a compose hash) this page was given no list to trust.
  const receipt = checks.receipt === "unpinned" ? "receipt ✓ (code not pinned)" : "receipt ✓";
  return (
    <span class={checks.anchored === "failed" ? "bad" : "muted"} title={checks.detail}>
      {receipt} · {anchored}
    </span>
  );
}

export function WalletPage({ session, param }: PageProps) {
  const address = (param ?? "").toLowerCase();
  const loaded = useLoad(() => walletData(session.client, address), [address]);
  const checked = useLoad(() => checkedSignatures(session.client, address), [address]);
  return (
    <>
      <p>
        <a href="#/wallets">← All wallets</a>
      </p>
      <Load loaded={loaded} what="the wallet">
        {({ wallet, balance, groups, runs, events }) => (
          <>
            <dl class="facts">
              <dt>Name</dt>
              <dd data-testid="wallet-name">
                {wallet?.name || (wallet?.id === "0" ? "Account Master Wallet" : `wallet ${wallet?.id ?? "?"}`)}
              </dd>
              <dt>Id</dt>
              <dd>{wallet?.id ?? "—"}</dd>
              <dt>Address</dt>
              <dd>
                <Hex value={address} copy="Copy address" keep={26} />
              </dd>
              <dt>Solana address</dt>
              <dd>
                {wallet?.solana_address ? (
                  <Hex value={wallet.solana_address} copy="Copy Solana address" keep={26} testId="wallet-solana" />
                ) : (
                  "—"
                )}
              </dd>
              {wallet?.description && (
                <>
                  <dt>Description</dt>
                  <dd>{wallet.description}</dd>
                </>
              )}
            </dl>
            <Section id="balance" title="Balance">
              <p class="big" data-testid="wallet-balance" title={`${balance.balance_wei} wei`}>
                {ether(balance.balance_eth)}
              </p>
              <p class="muted">
                On chain {balance.chain_id}, at block {balance.block_number}.
              </p>
            </Section>
            <GuardrailSection session={session} address={address} />
            <Section id="wallet-groups" title="Groups">
              <List
                items={groups}
                empty={
                  <>
                    In no group: no script may use it yet. Add it to one in <a href="#/groups">Groups and actions</a>,
                    or allow a script from the <a href="#/playground">Playground</a>.
                  </>
                }
                caption="Groups that let scripts use this wallet"
                columns={[
                  ["Id", (g: Group) => g.id],
                  ["Group", (g) => g.group_name],
                  [
                    "How",
                    (g) => (g.pkp_ids_permitted.includes(address) ? "lists this wallet" : "any wallet of the account"),
                  ],
                  [
                    "Actions",
                    (g) =>
                      g.cid_hashes_permitted.includes("0")
                        ? "any action"
                        : `${g.cid_hashes_permitted.length} action${g.cid_hashes_permitted.length === 1 ? "" : "s"}`,
                  ],
                ]}
              />
            </Section>
            <Section id="signatures" title="Signatures, checked">
              <Load loaded={checked} what="the wallet's signatures">
                {(signatures) => (
                  <List
                    items={signatures}
                    empty="No signatures by this wallet in its history."
                    caption="Signatures runs made with this wallet, newest first (from the runs' signed receipts, each checked)"
                    columns={[
                      [
                        "When",
                        (s: WalletSignature) => (
                          <time dateTime={s.time} title={new Date(s.time).toLocaleString()}>
                            {ago(s.time)}
                          </time>
                        ),
                      ],
                      [
                        "Kind",
                        (s) =>
                          s.kind === "key_exported" ? (
                            <strong class="bad">private key read</strong>
                          ) : (
                            s.kind.replace("_", " ")
                          ),
                      ],
                      ["Digest signed", (s) => (s.digest ? <Hex value={s.digest} copy="Copy digest" /> : "—")],
                      ["Script", (s) => <Hex value={s.cid} copy="Copy CID" />],
                      ["Request", (s) => <Hex value={s.requestId} copy="Copy request id" keep={13} />],
                      ["Checked", (s) => <Checked s={s} />],
                    ]}
                  />
                )}
              </Load>
              <p class="muted">
                A run's receipt records the digest each signature was made over; the signature itself is in the run's
                answer. Verified: the receipt is signed by its instance's attested key and its batch is in the root that
                instance anchored on chain; "code not pinned": the attested code is one this page has no list of audited
                compose hashes for (a simulated local stack needs none). Read through {""}
                <a href="#/attestation">the deployment's public RPC</a>; check with your own RPC and compose hashes: the
                SDK's walletHistory.
              </p>
            </Section>
            <Section id="wallet-runs" title="Runs that used it">
              {runs.length === 0 ? (
                <Empty>No run used this wallet among the {events.length} most recent runs.</Empty>
              ) : (
                <List
                  items={runs.slice(0, 25)}
                  empty=""
                  caption="Runs that used this wallet, newest first"
                  columns={[
                    ["When", (r: WalletRun) => <time dateTime={r.time}>{new Date(r.time).toLocaleString()}</time>],
                    ["Script", (r) => <Hex value={r.cid} copy="Copy CID" />],
                    ["Signatures", (r) => String(r.signatures)],
                    [
                      "Outcome",
                      (r) => (r.failed ? <span class="bad">failed: {r.failed}</span> : <span class="good">ok</span>),
                    ],
                    ["Private key read", (r) => (r.exported ? <strong class="bad">yes</strong> : "no")],
                  ]}
                />
              )}
            </Section>
          </>
        )}
      </Load>
    </>
  );
}
