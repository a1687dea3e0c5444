// A wallet's guardrail on its page (docs/design/guardrails.md): what the wallet may sign, in words
// (shared/guardrails/describe.ts, as `sigil guardrail show` says it), with the document's hash and
// the block that set it. With the master key it is set from a template — a form made from the
// template's parameters (shared/guardrails/templates.ts, as `sigil guardrail template` fills them) —
// or edited as JSON, previewed (the document and its words, checked as the API will check it) before
// "Set guardrail", whose write cost is said first; or removed after a confirmation. A usage key sees
// it read-only. The templates and the checker (zod, viem's ABI parser) are a chunk of their own,
// fetched when the editor opens.
import { useState } from "preact/hooks";
import type { Session } from "../session.ts";
import type { GetWalletGuardrailOutput, SetWalletGuardrailInput } from "../../../sdk/src/index.ts";
import { describeBudgetUse, describeGuardrail } from "../../../shared/guardrails/describe.ts";
import type { Guardrail } from "../../../shared/guardrails/schema.ts";
import { dollars, ErrorNote, Field, Form, Hex, Load, Section, useAction, useLoad, type Loaded } from "../ui.tsx";

/** What the editor needs, loaded when it opens. */
async function editorKit() {
  const [templates, evaluate] = await Promise.all([
    import("../../../shared/guardrails/templates.ts"),
    import("../../../shared/guardrails/evaluate.ts"),
  ]);
  return { ...templates, guardrailDocumentSchema: evaluate.guardrailDocumentSchema };
}
type Kit = Awaited<ReturnType<typeof editorKit>>;

/** The document in words, a line each; a line the describer indents is a part of the line above it. */
export function GuardrailWords({ guardrail, testId }: { guardrail: Guardrail; testId: string }) {
  return (
    <ul class="guardrail-words" data-testid={testId}>
      {describeGuardrail(guardrail).map((line) => (
        <li class={line.startsWith("  ") ? "sub" : undefined}>{line.trim()}</li>
      ))}
    </ul>
  );
}

/** What each budget has used in its window and what is left, read live from the wallet's counters. */
function BudgetsUsed({ session, address, hash }: { session: Session; address: string; hash: string }) {
  const loaded = useLoad(() => session.client.getWalletBudgets({ wallet_address: address }), [address, hash]);
  return (
    <Load loaded={loaded} what="its budgets">
      {(b) => (
        <>
          <p>Budgets used now (rolling windows):</p>
          <ul class="guardrail-words" data-testid="guardrail-budgets">
            {b.budgets.length === 0 ? (
              <li>nothing counted yet</li>
            ) : (
              b.budgets.map((state) => <li>{describeBudgetUse(state)}</li>)
            )}
          </ul>
        </>
      )}
    </Load>
  );
}

type Mode = "template" | "json";

export function GuardrailSection({ session, address }: { session: Session; address: string }) {
  const loaded = useLoad(() => session.client.getWalletGuardrail({ wallet_address: address }), [address]);
  const master = session.kind === "key" && session.keyKind === "master";
  const [mode, setMode] = useState<Mode | undefined>();
  const [done, setDone] = useState<string | undefined>();
  const remove = useAction(async () => {
    if (!confirm(`Remove this wallet's guardrail? It will then sign whatever the scripts its groups allow ask.`))
      return undefined;
    setDone(undefined);
    const answer = await session.client.setWalletGuardrail({ wallet_address: address, guardrail: null });
    setMode(undefined);
    setDone("Guardrail removed.");
    loaded.reload();
    return answer;
  });
  const open = (m: Mode) => {
    setDone(undefined);
    setMode(mode === m ? undefined : m);
  };
  return (
    <Section id="guardrail" title="What this wallet may sign">
      <Load loaded={loaded} what="its guardrail">
        {(g) => (
          <>
            {g.guardrail === null ? (
              <p data-testid="guardrail-none">
                No guardrail: it signs whatever the scripts its groups allow ask.
                {master && " Set one to say what it may sign; anything else is then refused."}
              </p>
            ) : (
              <>
                <p>Only this; anything else a script asks it to sign is refused:</p>
                <GuardrailWords guardrail={g.guardrail as Guardrail} testId="guardrail-words" />
                {(g.guardrail as Guardrail).budgets?.length ? (
                  <BudgetsUsed session={session} address={address} hash={g.guardrail_hash ?? ""} />
                ) : null}
                <dl class="facts">
                  <dt>Guardrail hash</dt>
                  <dd>
                    <Hex value={g.guardrail_hash ?? ""} copy="Copy guardrail hash" testId="guardrail-hash" />
                  </dd>
                  <dt>Set at block</dt>
                  <dd data-testid="guardrail-block">{g.set_at_block}</dd>
                </dl>
              </>
            )}
            {master ? (
              <div class="row">
                <button
                  type="button"
                  class="secondary"
                  aria-expanded={mode === "template"}
                  onClick={() => open("template")}
                >
                  Set from a template
                </button>
                <button type="button" class="secondary" aria-expanded={mode === "json"} onClick={() => open("json")}>
                  Edit as JSON
                </button>
                {g.guardrail !== null && (
                  <button type="button" class="danger" disabled={remove.busy} onClick={() => void remove.run()}>
                    {remove.busy ? "Removing…" : "Remove guardrail"}
                  </button>
                )}
              </div>
            ) : (
              <p class="muted">Read-only: only the account's master key sets or removes a wallet's guardrail.</p>
            )}
            <ErrorNote error={remove.error} />
            {done && (
              <p role="status" class="long" data-testid="guardrail-done">
                {done}
              </p>
            )}
            {master && mode && (
              <GuardrailEditor
                key={mode}
                mode={mode}
                session={session}
                address={address}
                current={g}
                onCancel={() => setMode(undefined)}
                onSet={(hash) => {
                  setMode(undefined);
                  setDone(`Guardrail set: ${hash}.`);
                  loaded.reload();
                }}
              />
            )}
          </>
        )}
      </Load>
    </Section>
  );
}

/** The document to preview, or what is wrong, each in words. */
type Draft = { document?: Guardrail; problems?: string[] };

function GuardrailEditor(props: {
  mode: Mode;
  session: Session;
  address: string;
  current: GetWalletGuardrailOutput;
  onCancel(): void;
  onSet(hash: string): void;
}) {
  const kit: Loaded<Kit> = useLoad(editorKit);
  const [draft, setDraft] = useState<Draft>({});
  const set = useAction(async (document: Guardrail) => {
    const answer = await props.session.client.setWalletGuardrail({
      wallet_address: props.address,
      guardrail: document as SetWalletGuardrailInput["guardrail"],
    });
    props.onSet(answer.guardrail_hash ?? "");
    return answer;
  });
  const fees = props.session.kind === "key" ? props.session.account.fees : undefined;
  const title = props.mode === "template" ? "Set from a template" : "Edit as JSON";
  return (
    <section class="panel guardrail-editor" aria-labelledby="guardrail-editor">
      <h3 id="guardrail-editor">{title}</h3>
      <Load loaded={kit} what="the templates">
        {(k) =>
          props.mode === "template" ? (
            <TemplateForm kit={k} onDraft={setDraft} onCancel={props.onCancel} />
          ) : (
            <JsonForm
              kit={k}
              initial={props.current.guardrail as Guardrail | null}
              onDraft={setDraft}
              onCancel={props.onCancel}
            />
          )
        }
      </Load>
      {draft.problems && (
        <div class="error" role="alert" data-testid="guardrail-problems">
          <strong>Not a guardrail yet:</strong>
          <ul>
            {draft.problems.map((p) => (
              <li>{p}</li>
            ))}
          </ul>
        </div>
      )}
      {draft.document && (
        <div data-testid="guardrail-preview">
          <h4>Preview: the wallet may sign</h4>
          <GuardrailWords guardrail={draft.document} testId="guardrail-preview-words" />
          <h4>The document</h4>
          <pre class="output" data-testid="guardrail-preview-json">
            {JSON.stringify(draft.document, null, 2)}
          </pre>
          <p data-testid="guardrail-cost">
            {fees?.billing
              ? `Setting it is one write on chain: it costs ${dollars(fees.write_cents)} of the account's credit.`
              : "Setting it is one write on chain (free here: billing is off)."}{" "}
            {props.current.guardrail === null
              ? "Every run from then on is held to it."
              : "It replaces the guardrail the wallet has now, for every run from then on."}
          </p>
          <button type="button" disabled={set.busy} onClick={() => void set.run(draft.document as Guardrail)}>
            {set.busy ? "Setting…" : "Set guardrail"}
          </button>
          <ErrorNote error={set.error} />
        </div>
      )}
    </section>
  );
}

function TemplateForm({ kit, onDraft, onCancel }: { kit: Kit; onDraft(d: Draft): void; onCancel(): void }) {
  const [name, setName] = useState(kit.guardrailTemplates[0]?.name ?? "");
  const [values, setValues] = useState<Record<string, string>>({});
  const template = kit.templateNamed(name);
  const params = template ? kit.paramsOf(template) : [];
  const [invalid, setInvalid] = useState<Set<string>>(new Set());
  const preview = {
    busy: false,
    run() {
      if (!template) return;
      const filled = kit.fillTemplate(template, values);
      if (filled.problems) {
        setInvalid(new Set(filled.problems.map((p) => p.param)));
        onDraft({
          problems: filled.problems.map((p) => {
            const param = params.find((x) => x.name === p.param);
            return param ? `${param.title}: ${p.message}` : p.message;
          }),
        });
      } else {
        setInvalid(new Set());
        onDraft({ document: filled.document });
      }
    },
  };
  const change = (param: string, value: string) => {
    setValues((v) => ({ ...v, [param]: value }));
    onDraft({});
  };
  return (
    <Form plain submit="Preview" action={preview} onCancel={onCancel}>
      <Field label="Template" hint={template?.summary ?? ""}>
        <select
          value={name}
          onChange={(e) => {
            setName(e.currentTarget.value);
            setValues({});
            setInvalid(new Set());
            onDraft({});
          }}
        >
          {kit.guardrailTemplates.map((t) => (
            <option value={t.name}>{t.name}</option>
          ))}
        </select>
      </Field>
      {params.map((p) => {
        const hint = `${p.description}${p.list ? (p.multiline ? "; one per line" : "; comma-separated") : ""}${p.example ? `. E.g. ${p.example.replace(/^"|"$/g, "")}` : ""}`;
        const common = {
          value: values[p.name] ?? "",
          "aria-invalid": invalid.has(p.name) || undefined,
          spellcheck: false,
          autoComplete: "off",
        };
        return (
          <Field key={`${name}.${p.name}`} label={`${p.title}${p.required ? "" : " (optional)"}`} hint={hint}>
            {p.multiline ? (
              <textarea rows={3} {...common} onInput={(e) => change(p.name, e.currentTarget.value)} />
            ) : (
              <input
                {...common}
                inputMode={p.type === "number" && !p.list ? "numeric" : undefined}
                onInput={(e) => change(p.name, e.currentTarget.value)}
              />
            )}
          </Field>
        );
      })}
    </Form>
  );
}

const SKELETON = `{
  "version": 1,
  "transactions": { "chains": [1], "max_value_wei": "0" }
}`;

function JsonForm({
  kit,
  initial,
  onDraft,
  onCancel,
}: {
  kit: Kit;
  initial: Guardrail | null;
  onDraft(d: Draft): void;
  onCancel(): void;
}) {
  const [text, setText] = useState(initial ? JSON.stringify(initial, null, 2) : SKELETON);
  const preview = {
    busy: false,
    run() {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (e) {
        onDraft({ problems: [`not JSON: ${(e as Error).message}`] });
        return;
      }
      const checked = kit.guardrailDocumentSchema.safeParse(value);
      onDraft(
        checked.success
          ? { document: checked.data }
          : { problems: checked.error.issues.map((i) => `${i.path.join(".") || "the document"}: ${i.message}`) },
      );
    },
  };
  return (
    <Form plain submit="Preview" action={preview} onCancel={onCancel}>
      <Field
        label="Guardrail document (JSON)"
        hint="Deny by default: what no section allows is refused. The language is docs/design/guardrails.md."
      >
        <textarea
          rows={14}
          spellcheck={false}
          value={text}
          onInput={(e) => {
            setText(e.currentTarget.value);
            onDraft({});
          }}
        />
      </Field>
    </Form>
  );
}
