// Keys: the account's usage keys with their permissions, spend against their cap (a bar when there is
// one), when each was last used (its newest run or write in the usage history) and expiry; a form
// that adds one (the key shown once, with a copy button), the same form to change one's
// permissions, what a key's own guardrail lets it sign, and removal after a confirmation. Keys are never shown again: the list has hashes.
// Signed in with a ChainSecured account's admin wallet, the page registers a key by signature
// instead (walletKeys.tsx).
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { AddUsageApiKeyInput, PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { noPermissions, permissionFields, permissionsOf } from "../../../shared/permissions.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { WalletKeys } from "./walletKeys.tsx";
import { GuardrailWords } from "./guardrail.tsx";
import { describeBudgetUse } from "../../../shared/guardrails/describe.ts";
import type { Guardrail } from "../../../shared/guardrails/schema.ts";
import { ago, dollars, Form, List, Load, NewKey, Section, Short, TextField, useAction, useLoad } from "../ui.tsx";

type Key = PageItem<"listApiKeys">;
type Permissions = Omit<AddUsageApiKeyInput, "expires_at" | "spend_limit_cents"> & { expires: string; cap: string };

const NONE: Permissions = { name: "", description: "", ...noPermissions(), expires: "", cap: "" };

const GROUP_LISTS = [
  ["execute_in_groups", "Run in groups"],
  ["manage_ipfs_ids_in_groups", "Manage actions in groups"],
  ["add_pkp_to_groups", "Add wallets to groups"],
  ["remove_pkp_from_groups", "Remove wallets from groups"],
] as const;
const LIST_LABELS = Object.fromEntries(GROUP_LISTS) as Record<(typeof GROUP_LISTS)[number][0], string>;
const FLAGS = [
  ["can_create_groups", "Create groups"],
  ["can_delete_groups", "Delete groups"],
  ["can_create_pkps", "Create wallets"],
] as const;

/** "1, 2" → ["1", "2"]; "0" is every group. Anything but group ids is refused before sending. */
function groupIds(text: string, label: string): string[] {
  const ids = text.split(/[\s,]+/).filter(Boolean);
  for (const id of ids)
    if (!/^\d{1,20}$/.test(id)) throw new Error(`${label}: "${id}" is not a group id (a number; 0 = every group)`);
  return ids;
}

/** A key as the edit form shows it. */
function formOf(k: Key): Permissions {
  return {
    name: k.name,
    description: k.description,
    ...permissionsOf(k, (g) => g),
    expires: k.expires_at ? new Date(k.expires_at * 1000).toISOString().slice(0, 10) : "",
    cap: k.spend_limit_cents ? String(k.spend_limit_cents) : "",
  };
}

function spent(k: Key): string {
  return k.spend_limit_cents
    ? `${dollars(k.spent_cents)} of ${dollars(k.spend_limit_cents)}`
    : `${dollars(k.spent_cents)} (no cap)`;
}

/** The spend cell: the words, and under a cap a bar of how much of it is used. */
function Spend({ k }: { k: Key }) {
  if (!k.spend_limit_cents) return <>{spent(k)}</>;
  const used = Math.min(1, k.spent_cents / k.spend_limit_cents);
  return (
    <span class="spend">
      {spent(k)}
      <meter
        min={0}
        max={1}
        low={0.75}
        high={0.9}
        optimum={0}
        value={used}
        aria-label={`${Math.round(used * 100)}% of the cap of ${k.name}`}
      />
    </span>
  );
}

/** When a key last ran or wrote: its newest event in the usage history (undefined: none kept). */
type LastUse = { time: string; what: string } | undefined;

function lastUseOf(e: PageItem<"listUsage"> | undefined): LastUse {
  if (!e) return undefined;
  return { time: e.time, what: e.kind === "write" ? (e.operation ?? "a write") : "a run" };
}

/** The keys, and each one's last use; the master key's among the account's newest 100 runs and writes. */
async function keysData(client: SigilClient) {
  const keys = await collect(client.all.listApiKeys());
  const [uses, recent] = await Promise.all([
    Promise.all(
      keys.map((k) =>
        client.listUsage({ key_hash: k.id, kind: "run,write", limit: 1 }).then(
          (page) => lastUseOf(page.events[0]),
          () => undefined,
        ),
      ),
    ),
    client.listUsage({ kind: "run,write", limit: 100 }).then(
      (page) => page.events,
      () => [],
    ),
  ]);
  const lastUse = Object.fromEntries(keys.map((k, i) => [k.id, uses[i]])) as Record<string, LastUse>;
  return { keys, lastUse, master: lastUseOf(recent.find((e) => e.key_hash === null)) };
}

function LastUsed({ use }: { use: LastUse }) {
  if (!use) return <span class="muted">never</span>;
  return (
    <time dateTime={use.time} title={new Date(use.time).toLocaleString()}>
      {ago(use.time)} <span class="muted">({use.what})</span>
    </time>
  );
}

function summary(k: Key): string {
  const parts: string[] = [];
  for (const [flag, label] of FLAGS) if (k[flag]) parts.push(label.toLowerCase());
  for (const [list, label] of GROUP_LISTS)
    if (k[list].length) parts.push(`${label.toLowerCase()} ${k[list].map((g) => (g === "0" ? "all" : g)).join(", ")}`);
  return parts.join("; ") || "none";
}

export function Keys({ session }: PageProps) {
  return session.kind === "wallet" ? <WalletKeys session={session} /> : <AccountKeys session={session} />;
}

function AccountKeys({ session }: PageProps) {
  const loaded = useLoad(() => keysData(session.client));
  const [editing, setEditing] = useState<Key | undefined>();
  const [guarded, setGuarded] = useState<Key | undefined>();
  return (
    <>
      <Load loaded={loaded} what="usage keys">
        {({ keys, lastUse, master }) => (
          <>
            {session.kind === "key" && session.keyKind === "master" && (
              <p data-testid="master-last-used">
                The master key was last used: <LastUsed use={master} />
              </p>
            )}
            <List
              items={keys}
              empty="No usage keys yet: the master key is the only one."
              caption="The account's usage keys"
              columns={[
                ["Name", (k) => k.name],
                ["Hash", (k) => <Short value={k.id} />],
                ["Permissions", summary],
                ["Spent", (k) => <Spend k={k} />],
                ["Last used", (k) => <LastUsed use={lastUse[k.id]} />],
                ["Expires", (k) => (k.expires_at ? new Date(k.expires_at * 1000).toISOString().slice(0, 10) : "never")],
              ]}
              name={(k) => k.name}
              buttons={[
                { label: "Edit", onClick: setEditing },
                { label: "What it may sign", onClick: (k) => setGuarded(guarded?.id === k.id ? undefined : k) },
              ]}
              remove={{
                ask: (k) => `Remove the usage key "${k.name}"? It stops working at once.`,
                run: async (k) => {
                  await session.client.removeUsageApiKey({ usage_api_key: k.id });
                  loaded.reload();
                },
              }}
            />
          </>
        )}
      </Load>
      {guarded && <KeyGuardrail key={guarded.id} session={session} k={guarded} />}
      {editing ? (
        <KeyForm
          key={editing.id}
          title={`Edit "${editing.name}"`}
          initial={formOf(editing)}
          submit="Save changes"
          onCancel={() => setEditing(undefined)}
          send={async (p) => {
            await session.client.updateUsageApiKey({ usage_api_key: editing.id, ...p });
            setEditing(undefined);
            loaded.reload();
            return undefined;
          }}
        />
      ) : (
        <KeyForm
          title="Add a usage key"
          initial={NONE}
          submit="Add key"
          send={async (p) => {
            const made = await session.client.addUsageApiKey(p);
            loaded.reload();
            return made.usage_api_key;
          }}
        />
      )}
    </>
  );
}

/**
 * A usage key's own guardrail in words (docs/design/guardrails.md, Narrowed per usage key): what every
 * run of the key may sign, with any wallet, on top of the wallet's own; and what its budgets have
 * used. Set with `sigil guardrail set key:<hash> FILE` or the API.
 */
function KeyGuardrail({ session, k }: { session: PageProps["session"]; k: Key }) {
  const loaded = useLoad(() => session.client.getUsageKeyGuardrail({ usage_api_key: k.id }), [k.id]);
  return (
    <Section id="key-guardrail" title={`What "${k.name}" may sign`}>
      <Load loaded={loaded} what="its guardrail">
        {(g) =>
          g.guardrail === null ? (
            <p data-testid="key-guardrail-none">
              No guardrail of its own: its runs sign what each wallet's guardrail allows. Set one with{" "}
              <code>sigil guardrail set key:{k.id} FILE</code>.
            </p>
          ) : (
            <>
              <p>With any wallet, only this — and only what the wallet's own guardrail allows too:</p>
              <GuardrailWords guardrail={g.guardrail as Guardrail} testId="key-guardrail-words" />
              {g.budgets.length > 0 && (
                <ul class="guardrail-words" data-testid="key-guardrail-budgets">
                  {g.budgets.map((b) => (
                    <li>{describeBudgetUse(b)}</li>
                  ))}
                </ul>
              )}
              <p class="muted">
                Guardrail <Short value={g.guardrail_hash ?? ""} />, set at block {g.set_at_block}.
              </p>
            </>
          )
        }
      </Load>
    </Section>
  );
}

function KeyForm(props: {
  title: string;
  initial: Permissions;
  submit: string;
  send(p: AddUsageApiKeyInput): Promise<string | undefined>;
  onCancel?(): void;
}) {
  const [p, setP] = useState<Permissions>(props.initial);
  const [lists, setLists] = useState<Record<string, string>>(
    Object.fromEntries(GROUP_LISTS.map(([list]) => [list, props.initial[list].join(", ")])),
  );
  const action = useAction(async () => {
    const input: AddUsageApiKeyInput = {
      name: p.name.trim(),
      description: p.description.trim(),
      ...permissionFields(
        (flag) => p[flag],
        (list) => groupIds(lists[list] ?? "", LIST_LABELS[list]),
      ),
      ...(p.expires ? { expires_at: Math.floor(Date.parse(`${p.expires}T00:00:00Z`) / 1000) } : {}),
      ...(p.cap ? { spend_limit_cents: Number(p.cap) } : {}),
    };
    return props.send(input);
  });
  const id = props.title.replace(/\W+/g, "-").toLowerCase();
  return (
    <Section id={id} title={props.title}>
      <Form
        submit={props.submit}
        busyLabel="Sending…"
        action={action}
        row
        onCancel={props.onCancel}
        outcome={action.result && <NewKey value={action.result} />}
      >
        <TextField label="Name" required maxLength={256} value={p.name} onInput={(name) => setP({ ...p, name })} />
        <TextField
          label="Description"
          maxLength={1024}
          value={p.description}
          onInput={(description) => setP({ ...p, description })}
        />
        <fieldset>
          <legend>May</legend>
          {FLAGS.map(([flag, label]) => (
            <label class="row">
              <input
                type="checkbox"
                class="check"
                checked={p[flag]}
                onChange={(e) => setP({ ...p, [flag]: e.currentTarget.checked })}
              />
              {label}
            </label>
          ))}
        </fieldset>
        {GROUP_LISTS.map(([list, label]) => (
          <TextField
            label={label}
            hint="Group ids, comma-separated; 0 = every group"
            inputMode="numeric"
            value={lists[list] ?? ""}
            onInput={(ids) => setLists({ ...lists, [list]: ids })}
          />
        ))}
        <TextField
          label="Expires on"
          hint="Empty: never"
          type="date"
          value={p.expires}
          onInput={(expires) => setP({ ...p, expires })}
        />
        <TextField
          label="Spend cap (cents)"
          hint="Empty: no cap"
          type="number"
          min={0}
          step={1}
          value={p.cap}
          onInput={(cap) => setP({ ...p, cap })}
        />
      </Form>
    </Section>
  );
}
