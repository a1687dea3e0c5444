// Keys: the account's usage keys with their permissions, spend against their cap and expiry; a form
// that adds one (the key shown once, with a copy button), the same form to change one's
// permissions, and removal after a confirmation. Keys are never shown again: the list has hashes.
// Signed in with a ChainSecured account's admin wallet, the page registers a key by signature
// instead (walletKeys.tsx).
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { AddUsageApiKeyInput, PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { noPermissions, permissionFields, permissionsOf } from "../../../shared/permissions.ts";
import { WalletKeys } from "./walletKeys.tsx";
import { CopyButton, dollars, Empty, ErrorNote, Field, Form, Load, Short, Table, useAction, useLoad } from "../ui.tsx";

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

async function allKeys(client: SigilClient): Promise<Key[]> {
  const keys: Key[] = [];
  for await (const k of client.all.listApiKeys()) keys.push(k);
  return keys;
}

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
  const loaded = useLoad(() => allKeys(session.client));
  const [editing, setEditing] = useState<Key | undefined>();
  const remove = useAction(async (k: Key) => {
    if (!confirm(`Remove the usage key "${k.name}"? It stops working at once.`)) return undefined;
    await session.client.removeUsageApiKey({ usage_api_key: k.id });
    loaded.reload();
    return k;
  });
  return (
    <>
      <Load loaded={loaded} what="usage keys">
        {(keys) =>
          keys.length === 0 ? (
            <Empty>No usage keys yet: the master key is the only one.</Empty>
          ) : (
            <Table
              caption="The account's usage keys"
              head={["Name", "Hash", "Permissions", "Spent", "Expires", ""]}
              rows={keys.map((k) => [
                k.name,
                <Short value={k.id} />,
                summary(k),
                k.spend_limit_cents
                  ? `${dollars(k.spent_cents)} of ${dollars(k.spend_limit_cents)}`
                  : `${dollars(k.spent_cents)} (no cap)`,
                k.expires_at ? new Date(k.expires_at * 1000).toISOString().slice(0, 10) : "never",
                <span class="row">
                  <button
                    type="button"
                    class="small secondary"
                    onClick={() => setEditing(k)}
                    aria-label={`Edit ${k.name}`}
                  >
                    Edit
                  </button>
                  <button
                    type="button"
                    class="small danger"
                    disabled={remove.busy}
                    onClick={() => void remove.run(k)}
                    aria-label={`Remove ${k.name}`}
                  >
                    Remove
                  </button>
                </span>,
              ])}
            />
          )
        }
      </Load>
      <ErrorNote error={remove.error} />
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
    <section aria-labelledby={id}>
      <h2 id={id}>{props.title}</h2>
      <Form onSubmit={() => action.run()}>
        <Field label="Name">
          <input required maxLength={256} value={p.name} onInput={(e) => setP({ ...p, name: e.currentTarget.value })} />
        </Field>
        <Field label="Description">
          <input
            maxLength={1024}
            value={p.description}
            onInput={(e) => setP({ ...p, description: e.currentTarget.value })}
          />
        </Field>
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
          <Field label={label} hint="Group ids, comma-separated; 0 = every group">
            <input
              inputMode="numeric"
              value={lists[list]}
              onInput={(e) => setLists({ ...lists, [list]: e.currentTarget.value })}
            />
          </Field>
        ))}
        <Field label="Expires on" hint="Empty: never">
          <input type="date" value={p.expires} onInput={(e) => setP({ ...p, expires: e.currentTarget.value })} />
        </Field>
        <Field label="Spend cap (cents)" hint="Empty: no cap">
          <input
            type="number"
            min={0}
            step={1}
            value={p.cap}
            onInput={(e) => setP({ ...p, cap: e.currentTarget.value })}
          />
        </Field>
        <div class="row">
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Sending…" : props.submit}
          </button>
          {props.onCancel && (
            <button type="button" class="secondary" onClick={props.onCancel}>
              Cancel
            </button>
          )}
        </div>
        <ErrorNote error={action.error} />
        {action.result && (
          <div class="panel" role="status">
            <p>
              <strong>The new key, shown this once:</strong> keep it somewhere safe.
            </p>
            <p class="row">
              <code class="mono" data-testid="new-key">
                {action.result}
              </code>
              <CopyButton text={action.result} label="Copy key" />
            </p>
          </div>
        )}
      </Form>
    </section>
  );
}
