// Playground: write a script, give it parameters as JSON and a wallet, see the most a run can cost,
// run it, and see what it answered — its response, logs, duration and cost, or its error with the
// code. The chosen wallet is passed to the script as js_params.wallet. A run refused because no group
// lets it (the script's CID, or the wallet with it) offers a one-click allow: it says first what it
// will write (the group it adds the CID or the wallet to, or the group "playground" it creates), what
// that costs and the most the run can cost, then writes it and runs again.
import { useState } from "preact/hooks";
import type { PageProps, Session } from "../session.ts";
import type { PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { cidHash, toHash32 } from "../../../shared/hashing.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { CodeEditor } from "../editor.tsx";
import { dollars, ErrorNote, Field, Form, Hex, useAction, useLoad, type Shown } from "../ui.tsx";

type Group = PageItem<"listGroups">;

const EXAMPLE = `// A script's entry point: main(js_params). Sigil.Actions signs with the account's wallets.
async function main({ wallet, message }) {
  console.log("signing", message);
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}
`;

const ANY_WALLET = "0x0000000000000000000000000000000000000000";
/** The group the one-click allow creates when no group of the account fits. */
export const PLAYGROUND_GROUP = "playground";

/** The parameters as an object, or a refusal that says where the JSON is wrong. */
export function parseParams(text: string, wallet: string): Record<string, unknown> {
  let params: unknown = {};
  if (text.trim()) {
    try {
      params = JSON.parse(text);
    } catch (e) {
      throw Object.assign(new Error(`the parameters are not JSON: ${(e as Error).message}`), { code: "invalid_json" });
    }
  }
  if (params === null || typeof params !== "object" || Array.isArray(params))
    throw Object.assign(new Error('the parameters must be a JSON object, like {"message": "hi"}'), {
      code: "invalid_json",
    });
  return wallet && !("wallet" in params) ? { ...params, wallet } : (params as Record<string, unknown>);
}

/** What the one-click allow writes: one write to a group that exists, or a new group. */
export type Plan =
  | { kind: "add_action"; group: Group; cid: string; wallet: string }
  | { kind: "add_wallet"; group: Group; cid: string; wallet: string }
  | { kind: "create"; name: string; cid: string; wallet: string };

/**
 * How to let `cid` run with `wallet` ("" for none) in one write: the CID added to a group that
 * already lets the wallet be used ("playground" first), else the wallet added to a group that already
 * lists the CID, else a new group "playground" of both; undefined when a group lets both already.
 */
export function planFor(groups: Group[], cid: string, wallet: string): Plan | undefined {
  const hash = toHash32(cidHash(cid)).toLowerCase();
  const listsCid = (g: Group) => g.cid_hashes_permitted.some((h) => h === "0" || h.toLowerCase() === hash);
  const hasWallet = (g: Group) => !wallet || g.pkp_ids_permitted.some((w) => w === wallet || w === ANY_WALLET);
  // A group lets both already: the refusal is the key's (its execute scope), not the groups'.
  if (groups.some((g) => listsCid(g) && hasWallet(g))) return undefined;
  const preferred = [...groups].sort(
    (a, b) => Number(b.group_name === PLAYGROUND_GROUP) - Number(a.group_name === PLAYGROUND_GROUP),
  );
  const withWallet = preferred.find((g) => hasWallet(g) && !listsCid(g));
  if (withWallet) return { kind: "add_action", group: withWallet, cid, wallet };
  const withCid = wallet ? preferred.find((g) => listsCid(g) && !hasWallet(g)) : undefined;
  if (withCid) return { kind: "add_wallet", group: withCid, cid, wallet };
  return { kind: "create", name: PLAYGROUND_GROUP, cid, wallet };
}

/** Writes `plan` (one managed write). */
async function applyPlan(client: SigilClient, plan: Plan): Promise<void> {
  if (plan.kind === "add_action") await client.addActionToGroup({ group_id: plan.group.id, action_ipfs_cid: plan.cid });
  else if (plan.kind === "add_wallet") await client.addPkpToGroup({ group_id: plan.group.id, pkp_id: plan.wallet });
  else
    await client.addGroup({
      group_name: plan.name,
      group_description: "made by the dashboard's playground to allow a script",
      pkp_ids_permitted: plan.wallet ? [plan.wallet] : [],
      cid_hashes_permitted: [plan.cid],
    });
}

type Fees = { billing: boolean; run_cents_per_second: number; write_cents: number };

/** The most one run can cost: its time limit, rounded up to whole seconds, at the fee per second. */
export function maxRunCents(timeoutMs: number, fees: Fees): number {
  return fees.billing ? Math.max(1, Math.ceil(timeoutMs / 1000)) * fees.run_cents_per_second : 0;
}

function feesOf(session: Session): Fees | undefined {
  return session.kind === "key" ? session.account.fees : undefined;
}

/** A refusal the one-click allow can mend: the script's CID in no group of the key, or the wallet not with it. */
function refusal(
  error: Shown | undefined,
  cause: unknown,
  answer: { has_error: boolean; error?: { code: string; message: string } | undefined; cid: string } | undefined,
) {
  if (error?.code === "permission_denied") {
    const details = (cause as { details?: { scope?: string; cid?: string } } | undefined)?.details;
    if (details?.scope === "execute" && details.cid) return { cid: details.cid };
  }
  // A wallet the run asked for and may not use (not a fetch the network policy refused).
  if (answer?.has_error && answer.error?.code === "permission_denied" && /is not usable/.test(answer.error.message))
    return { cid: answer.cid };
  return undefined;
}

export function Playground({ session }: PageProps) {
  const list = useLoad(() => collect(session.client.all.listWallets()).catch(() => []));
  const limits = useLoad(() => session.client.getSigilActionClientConfig());
  const [code, setCode] = useState(EXAMPLE);
  const [params, setParams] = useState('{ "message": "hello from the dashboard" }');
  const [wallet, setWallet] = useState("");
  // The thrown error itself (its details name the CID a refusal is about).
  const [cause, setCause] = useState<unknown>();
  const run = useAction(async () => {
    setCause(undefined);
    try {
      return await session.client.sigilAction({ code, js_params: parseParams(params, wallet) });
    } catch (e) {
      setCause(e);
      throw e;
    }
  });
  const answer = run.result;
  const fees = feesOf(session);
  const most = limits.data && fees ? maxRunCents(limits.data.timeout_ms, fees) : undefined;
  const denied = refusal(run.error, cause, answer);
  return (
    <>
      <p class="muted">
        A script runs only with a wallet of a group that also lists the script's CID (Groups and actions).
      </p>
      {/* The run's error is under the form, beside its answer. */}
      <Form plain submit="Run" busyLabel="Running…" action={{ busy: run.busy, run: () => run.run() }}>
        <CodeEditor label="Script" value={code} onInput={setCode} />
        <Field label="Parameters (JSON)" hint="js_params: the object main() gets">
          <textarea rows={3} spellcheck={false} value={params} onInput={(e) => setParams(e.currentTarget.value)} />
        </Field>
        <Field label="Wallet" hint="Passed as js_params.wallet">
          <select value={wallet} onChange={(e) => setWallet(e.currentTarget.value)}>
            <option value="">none</option>
            {(list.data ?? []).map((w) => (
              <option value={w.wallet_address}>
                {w.name || `wallet ${w.id}`} — {w.wallet_address}
              </option>
            ))}
          </select>
        </Field>
        {limits.data && fees && (
          <p class="muted" data-testid="run-most">
            {fees.billing ? (
              <>
                A run costs at most <strong>{dollars(most ?? 0)}</strong>: it is stopped after{" "}
                {limits.data.timeout_ms / 1000} s, at {dollars(fees.run_cents_per_second)} per started second.
              </>
            ) : (
              "Runs are free on this deployment (billing is off)."
            )}
          </p>
        )}
      </Form>
      <ErrorNote error={run.error} />
      {denied && (
        <Allow
          key={`${denied.cid} ${wallet}`}
          client={session.client}
          cid={denied.cid}
          wallet={wallet}
          fees={fees}
          mostCents={most}
          onAllowed={() => void run.run()}
        />
      )}
      {answer && (
        <section aria-labelledby="result" data-testid="run-result">
          <h2 id="result">{answer.has_error ? "The script failed" : "Result"}</h2>
          {answer.has_error && answer.error && (
            <ErrorNote error={{ message: answer.error.message, code: answer.error.code }} />
          )}
          <dl class="facts">
            <dt>Duration</dt>
            <dd>{answer.duration_ms} ms</dd>
            <dt>Cost</dt>
            <dd data-testid="run-cost">{dollars(answer.charged_cents)}</dd>
            <dt>CID</dt>
            <dd>
              <Hex value={answer.cid} copy="Copy CID" keep={30} />
            </dd>
          </dl>
          {!answer.has_error && (
            <>
              <h3>Response</h3>
              <pre class="output" data-testid="run-response">
                {JSON.stringify(answer.response, null, 2)}
              </pre>
            </>
          )}
          <h3>Logs</h3>
          <pre class="output" data-testid="run-logs">
            {answer.logs || "(none)"}
          </pre>
        </section>
      )}
    </>
  );
}

/** The one-click allow: what it will write, what that and the run may cost, then the write and the run again. */
function Allow(props: {
  client: SigilClient;
  cid: string;
  wallet: string;
  fees: Fees | undefined;
  mostCents: number | undefined;
  onAllowed(): void;
}) {
  const groups = useLoad(() => collect(props.client.all.listGroups()));
  const allow = useAction(async (plan: Plan) => {
    await applyPlan(props.client, plan);
    props.onAllowed();
    return plan;
  });
  const plan = groups.data && planFor(groups.data, props.cid, props.wallet);
  const writeCost = props.fees?.billing ? dollars(props.fees.write_cents) : "nothing";
  return (
    <section class="panel allow" aria-labelledby="allow" data-testid="allow">
      <h2 id="allow">Allow this script?</h2>
      {plan && <p>No group lets this script run{props.wallet ? " with this wallet" : ""}. One write fixes that:</p>}
      {groups.error && <ErrorNote error={groups.error} />}
      {groups.data && !plan && (
        <p>
          A group lets this script run{props.wallet ? " with this wallet" : ""} already: the key's own permissions
          refuse it (its "Run in groups", on the Keys page).
        </p>
      )}
      {plan && (
        <>
          <ul data-testid="allow-plan">
            <li>
              {plan.kind === "add_action" ? (
                <>
                  Add the script's CID to the group <strong>{plan.group.group_name}</strong> (id {plan.group.id})
                </>
              ) : plan.kind === "add_wallet" ? (
                <>
                  Add the wallet to the group <strong>{plan.group.group_name}</strong> (id {plan.group.id}), which lists
                  the script
                </>
              ) : (
                <>
                  Create the group <strong>{plan.name}</strong> with the script's CID
                  {plan.wallet ? " and the wallet" : ""}
                </>
              )}
            </li>
            <li>
              Script <Hex value={plan.cid} copy="Copy CID" />
            </li>
            {plan.wallet && (
              <li>
                Wallet <Hex value={plan.wallet} copy="Copy address" />
              </li>
            )}
            <li data-testid="allow-cost">
              The write costs {writeCost}; the run then costs at most{" "}
              {props.mostCents === undefined ? "its time limit" : dollars(props.mostCents)}.
            </li>
          </ul>
          <button type="button" disabled={allow.busy} onClick={() => void allow.run(plan)}>
            {allow.busy
              ? "Allowing…"
              : plan.kind === "create"
                ? `Create "${plan.name}" and run again`
                : `Add to "${plan.group.group_name}" and run again`}
          </button>
        </>
      )}
      <ErrorNote error={allow.error} />
      {allow.result && (
        <p role="status">
          Allowed
          {allow.result.kind === "create"
            ? ` in the new group "${allow.result.name}"`
            : ` in "${allow.result.group.group_name}"`}
          ; running again.
        </p>
      )}
    </section>
  );
}
