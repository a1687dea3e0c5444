// Playground: write a script, give it parameters as JSON and a wallet, run it, and see what it
// answered — its response, logs, duration and cost, or its error with the code. The chosen wallet
// is passed to the script as js_params.wallet.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { CodeEditor } from "../editor.tsx";
import { dollars, ErrorNote, Field, Form, useAction, useLoad } from "../ui.tsx";

const EXAMPLE = `// A script's entry point: main(js_params). Sigil.Actions signs with the account's wallets.
async function main({ wallet, message }) {
  console.log("signing", message);
  return await Sigil.Actions.signMessage({ pkpId: wallet, message });
}
`;

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

export function Playground({ session }: PageProps) {
  const list = useLoad(() => collect(session.client.all.listWallets()).catch(() => []));
  const [code, setCode] = useState(EXAMPLE);
  const [params, setParams] = useState('{ "message": "hello from the dashboard" }');
  const [wallet, setWallet] = useState("");
  const run = useAction(async () => session.client.sigilAction({ code, js_params: parseParams(params, wallet) }));
  const answer = run.result;
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
      </Form>
      <ErrorNote error={run.error} />
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
              <code class="mono">{answer.cid}</code>
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
