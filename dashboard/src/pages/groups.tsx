// Groups and actions: which wallets and which scripts a usage key may use together. The groups with
// their wallets and actions (an action by its CID where the registry knows it); a form to create a
// group or change one, picking from the account's wallets and registered actions; removal after a
// confirmation. Below, the registry of actions, where a script is added by pasting its code: its
// CID is computed by the service and shown before anything is written.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { Empty, ErrorNote, Field, Form, Load, Short, Table, useAction, useLoad } from "../ui.tsx";

type Group = PageItem<"listGroups">;
type Wallet = PageItem<"listWallets">;
type Action = PageItem<"listActions">;

const ANY_WALLET = "0x0000000000000000000000000000000000000000";

async function everything(client: SigilClient) {
  const groups: Group[] = [];
  const wallets: Wallet[] = [];
  const actions: Action[] = [];
  for await (const g of client.all.listGroups()) groups.push(g);
  for await (const w of client.all.listWallets()) wallets.push(w);
  for await (const a of client.all.listActions()) actions.push(a);
  return { groups, wallets, actions };
}

export function Groups({ session }: PageProps) {
  const loaded = useLoad(() => everything(session.client));
  const [editing, setEditing] = useState<Group | undefined>();
  const remove = useAction(async (g: Group) => {
    if (!confirm(`Remove the group "${g.group_name}"? Keys that run in it lose it at once.`)) return;
    await session.client.removeGroup({ group_id: g.id });
    loaded.reload();
  });
  const removeAction = useAction(async (a: Action) => {
    if (!confirm(`Remove the action "${a.name || a.action_ipfs_cid || a.hashed_cid}" from the account and its groups?`))
      return;
    await session.client.deleteAction({ hashed_cid: a.hashed_cid });
    loaded.reload();
  });
  return (
    <Load loaded={loaded} what="groups and actions">
      {({ groups, wallets, actions }) => {
        const cidOf = (hash: string) =>
          hash === "0"
            ? "any action"
            : (actions.find((a) => a.hashed_cid.toLowerCase() === hash.toLowerCase())?.action_ipfs_cid ?? hash);
        return (
          <>
            {groups.length === 0 ? (
              <Empty>No groups yet. A script may use a wallet only through a group that lists both.</Empty>
            ) : (
              <Table
                caption="The account's groups"
                head={["Id", "Name", "Wallets", "Actions", ""]}
                rows={groups.map((g) => [
                  g.id,
                  <>
                    {g.group_name}
                    {g.group_description && <div class="muted">{g.group_description}</div>}
                  </>,
                  g.pkp_ids_permitted.length
                    ? g.pkp_ids_permitted.map((w) => <div>{w === ANY_WALLET ? "any wallet" : <Short value={w} />}</div>)
                    : "none",
                  g.cid_hashes_permitted.length
                    ? g.cid_hashes_permitted.map((h) => (
                        <div>{h === "0" ? "any action" : <Short value={cidOf(h)} />}</div>
                      ))
                    : "none",
                  <span class="row">
                    <button
                      type="button"
                      class="small secondary"
                      onClick={() => setEditing(g)}
                      aria-label={`Edit group ${g.group_name}`}
                    >
                      Edit
                    </button>
                    <button
                      type="button"
                      class="small danger"
                      disabled={remove.busy}
                      onClick={() => void remove.run(g)}
                      aria-label={`Remove group ${g.group_name}`}
                    >
                      Remove
                    </button>
                  </span>,
                ])}
              />
            )}
            <ErrorNote error={remove.error} />
            <GroupForm
              key={editing?.id ?? "new"}
              group={editing}
              wallets={wallets}
              actions={actions}
              onCancel={() => setEditing(undefined)}
              send={async (input) => {
                if (editing)
                  await session.client.updateGroup({
                    group_id: editing.id,
                    name: input.name,
                    description: input.description,
                    pkp_ids_permitted: input.wallets,
                    cid_hashes_permitted: input.actions,
                  });
                else
                  await session.client.addGroup({
                    group_name: input.name,
                    group_description: input.description,
                    pkp_ids_permitted: input.wallets,
                    cid_hashes_permitted: input.actions,
                  });
                setEditing(undefined);
                loaded.reload();
              }}
            />
            <h2 id="actions">Actions</h2>
            {actions.length === 0 ? (
              <Empty>No actions registered yet.</Empty>
            ) : (
              <Table
                caption="The account's registered actions"
                head={["CID", "Name", "Description", ""]}
                rows={actions.map((a) => [
                  a.action_ipfs_cid ? <code class="mono">{a.action_ipfs_cid}</code> : <Short value={a.hashed_cid} />,
                  a.name || "—",
                  a.description || "—",
                  <button
                    type="button"
                    class="small danger"
                    disabled={removeAction.busy}
                    onClick={() => void removeAction.run(a)}
                    aria-label={`Remove action ${a.name || a.hashed_cid}`}
                  >
                    Remove
                  </button>,
                ])}
              />
            )}
            <ErrorNote error={removeAction.error} />
            <AddAction client={session.client} onAdded={loaded.reload} />
          </>
        );
      }}
    </Load>
  );
}

type GroupInput = { name: string; description: string; wallets: string[]; actions: string[] };

function GroupForm(props: {
  group: Group | undefined;
  wallets: Wallet[];
  actions: Action[];
  send(g: GroupInput): Promise<void>;
  onCancel(): void;
}) {
  const g = props.group;
  const [name, setName] = useState(g?.group_name ?? "");
  const [description, setDescription] = useState(g?.group_description ?? "");
  const [wallets, setWallets] = useState<string[]>(g?.pkp_ids_permitted ?? []);
  const [actions, setActions] = useState<string[]>(g?.cid_hashes_permitted.map((h) => h.toLowerCase()) ?? []);
  const [extra, setExtra] = useState("");
  const action = useAction(async () => {
    const cids = extra.split(/[\s,]+/).filter(Boolean);
    await props.send({ name: name.trim(), description: description.trim(), wallets, actions: [...actions, ...cids] });
  });
  const toggle = (list: string[], set: (l: string[]) => void, value: string, on: boolean) =>
    set(on ? [...list, value] : list.filter((v) => v !== value));
  const title = g ? `Edit group "${g.group_name}"` : "Create a group";
  return (
    <section aria-labelledby="group-form">
      <h2 id="group-form">{title}</h2>
      <Form onSubmit={() => action.run()}>
        <Field label="Group name">
          <input required maxLength={256} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Group description">
          <input maxLength={1024} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <fieldset>
          <legend>Wallets</legend>
          <label class="row">
            <input
              type="checkbox"
              checked={wallets.includes(ANY_WALLET)}
              onChange={(e) => toggle(wallets, setWallets, ANY_WALLET, e.currentTarget.checked)}
            />
            Any wallet of the account
          </label>
          {props.wallets.map((w) => (
            <label class="row">
              <input
                type="checkbox"
                checked={wallets.includes(w.wallet_address)}
                onChange={(e) => toggle(wallets, setWallets, w.wallet_address, e.currentTarget.checked)}
              />
              <span>
                {w.name || `wallet ${w.id}`} <code class="mono">{w.wallet_address}</code>
              </span>
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Actions</legend>
          <label class="row">
            <input
              type="checkbox"
              checked={actions.includes("0")}
              onChange={(e) => toggle(actions, setActions, "0", e.currentTarget.checked)}
            />
            Any action
          </label>
          {props.actions.map((a) => (
            <label class="row">
              <input
                type="checkbox"
                checked={actions.includes(a.hashed_cid.toLowerCase())}
                onChange={(e) => toggle(actions, setActions, a.hashed_cid.toLowerCase(), e.currentTarget.checked)}
              />
              <span>
                {a.name || "unnamed"} <code class="mono">{a.action_ipfs_cid ?? a.hashed_cid}</code>
              </span>
            </label>
          ))}
          <Field label="More actions by CID" hint="CIDs (Qm… or bafy…), comma-separated">
            <input spellcheck={false} value={extra} onInput={(e) => setExtra(e.currentTarget.value)} />
          </Field>
        </fieldset>
        <div class="row">
          <button type="submit" disabled={action.busy}>
            {action.busy ? "Sending…" : g ? "Save group" : "Create group"}
          </button>
          {g && (
            <button type="button" class="secondary" onClick={props.onCancel}>
              Cancel
            </button>
          )}
        </div>
        <ErrorNote error={action.error} />
      </Form>
    </section>
  );
}

function AddAction({ client, onAdded }: { client: SigilClient; onAdded(): void }) {
  const [code, setCode] = useState("");
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [cid, setCid] = useState<string | undefined>();
  const compute = useAction(async () => {
    const computed = await client.getSigilActionIpfsId(code);
    setCid(computed);
    return computed;
  });
  const add = useAction(async () => {
    if (!cid) throw new Error("compute the code's CID first");
    await client.addAction({ action_ipfs_cid: cid, name: name.trim(), description: description.trim() });
    setCode("");
    setName("");
    setDescription("");
    setCid(undefined);
    onAdded();
    return cid;
  });
  return (
    <section aria-labelledby="add-action">
      <h2 id="add-action">Add an action</h2>
      <Form onSubmit={() => (cid ? add.run() : compute.run())}>
        <Field label="Code" hint="The script, as it will run: its CID names exactly these bytes">
          <textarea
            rows={8}
            spellcheck={false}
            required
            value={code}
            onInput={(e) => {
              setCode(e.currentTarget.value);
              setCid(undefined);
            }}
          />
        </Field>
        {cid && (
          <p role="status">
            CID{" "}
            <code class="mono" data-testid="computed-cid">
              {cid}
            </code>
          </p>
        )}
        <Field label="Action name">
          <input maxLength={256} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Action description">
          <input maxLength={1024} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <button type="submit" disabled={compute.busy || add.busy}>
          {cid ? "Add action" : "Compute CID"}
        </button>
        <ErrorNote error={compute.error ?? add.error} />
        {add.result && <p role="status">Added {add.result}.</p>}
      </Form>
    </section>
  );
}
