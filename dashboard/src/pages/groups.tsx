// Groups and actions: which wallets and which scripts a usage key may use together. The groups with
// their wallets and actions (an action by its CID where the registry knows it); a form to create a
// group or change one, picking from the account's wallets and registered actions; removal after a
// confirmation. Below, the registry of actions, where a script is added by pasting its code: its
// CID is computed by the service and shown before anything is written.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { Field, Form, List, Load, Section, Short, TextField, useAction, useLoad } from "../ui.tsx";

type Group = PageItem<"listGroups">;
type Wallet = PageItem<"listWallets">;
type Action = PageItem<"listActions">;

const ANY_WALLET = "0x0000000000000000000000000000000000000000";

async function everything(client: SigilClient) {
  const groups = await collect(client.all.listGroups());
  const wallets = await collect(client.all.listWallets());
  return { groups, wallets, actions: await collect(client.all.listActions()) };
}

export function Groups({ session }: PageProps) {
  const loaded = useLoad(() => everything(session.client));
  const [editing, setEditing] = useState<Group | undefined>();
  return (
    <Load loaded={loaded} what="groups and actions">
      {({ groups, wallets, actions }) => {
        const cidOf = (hash: string) =>
          hash === "0"
            ? "any action"
            : (actions.find((a) => a.hashed_cid.toLowerCase() === hash.toLowerCase())?.action_ipfs_cid ?? hash);
        return (
          <>
            <List
              items={groups}
              empty="No groups yet. A script may use a wallet only through a group that lists both."
              caption="The account's groups"
              columns={[
                ["Id", (g) => g.id],
                [
                  "Name",
                  (g) => (
                    <>
                      {g.group_name}
                      {g.group_description && <div class="muted">{g.group_description}</div>}
                    </>
                  ),
                ],
                [
                  "Wallets",
                  (g) => each(g.pkp_ids_permitted, (w) => (w === ANY_WALLET ? "any wallet" : <Short value={w} />)),
                ],
                [
                  "Actions",
                  (g) => each(g.cid_hashes_permitted, (h) => (h === "0" ? "any action" : <Short value={cidOf(h)} />)),
                ],
              ]}
              name={(g) => `group ${g.group_name}`}
              buttons={[{ label: "Edit", onClick: setEditing }]}
              remove={{
                ask: (g) => `Remove the group "${g.group_name}"? Keys that run in it lose it at once.`,
                run: async (g) => {
                  await session.client.removeGroup({ group_id: g.id });
                  loaded.reload();
                },
              }}
            />
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
            <List
              items={actions}
              empty="No actions registered yet."
              caption="The account's registered actions"
              columns={[
                [
                  "CID",
                  (a) =>
                    a.action_ipfs_cid ? <code class="mono">{a.action_ipfs_cid}</code> : <Short value={a.hashed_cid} />,
                ],
                ["Name", (a) => a.name || "—"],
                ["Description", (a) => a.description || "—"],
              ]}
              name={(a) => `action ${a.name || a.hashed_cid}`}
              remove={{
                ask: (a) =>
                  `Remove the action "${a.name || a.action_ipfs_cid || a.hashed_cid}" from the account and its groups?`,
                run: async (a) => {
                  await session.client.deleteAction({ hashed_cid: a.hashed_cid });
                  loaded.reload();
                },
              }}
            />
            <AddAction client={session.client} onAdded={loaded.reload} />
          </>
        );
      }}
    </Load>
  );
}

/** A cell of one line per member, or "none". */
function each(members: string[], line: (member: string) => ComponentChildren): ComponentChildren {
  return members.length ? members.map((m) => <div>{line(m)}</div>) : "none";
}

/** A fieldset of checkboxes, one per option (its value and its words), `chosen` the values checked. */
function Checklist({
  legend,
  options,
  chosen,
  onChange,
  children,
}: {
  legend: string;
  options: Array<[value: string, label: ComponentChildren]>;
  chosen: string[];
  onChange(chosen: string[]): void;
  children?: ComponentChildren;
}) {
  return (
    <fieldset>
      <legend>{legend}</legend>
      {options.map(([value, label]) => (
        <label class="row">
          <input
            type="checkbox"
            checked={chosen.includes(value)}
            onChange={(e) => onChange(e.currentTarget.checked ? [...chosen, value] : chosen.filter((v) => v !== value))}
          />
          {label}
        </label>
      ))}
      {children}
    </fieldset>
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
  return (
    <Section id="group-form" title={g ? `Edit group "${g.group_name}"` : "Create a group"}>
      <Form
        submit={g ? "Save group" : "Create group"}
        busyLabel="Sending…"
        action={action}
        row
        onCancel={g && props.onCancel}
      >
        <TextField label="Group name" required maxLength={256} value={name} onInput={setName} />
        <TextField label="Group description" maxLength={1024} value={description} onInput={setDescription} />
        <Checklist
          legend="Wallets"
          options={[
            [ANY_WALLET, "Any wallet of the account"],
            ...props.wallets.map((w): [string, ComponentChildren] => [
              w.wallet_address,
              <span>
                {w.name || `wallet ${w.id}`} <code class="mono">{w.wallet_address}</code>
              </span>,
            ]),
          ]}
          chosen={wallets}
          onChange={setWallets}
        />
        <Checklist
          legend="Actions"
          options={[
            ["0", "Any action"],
            ...props.actions.map((a): [string, ComponentChildren] => [
              a.hashed_cid.toLowerCase(),
              <span>
                {a.name || "unnamed"} <code class="mono">{a.action_ipfs_cid ?? a.hashed_cid}</code>
              </span>,
            ]),
          ]}
          chosen={actions}
          onChange={setActions}
        >
          <TextField
            label="More actions by CID"
            hint="CIDs (Qm… or bafy…), comma-separated"
            spellcheck={false}
            value={extra}
            onInput={setExtra}
          />
        </Checklist>
      </Form>
    </Section>
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
    <Section id="add-action" title="Add an action">
      <Form
        submit={cid ? "Add action" : "Compute CID"}
        action={{
          busy: compute.busy || add.busy,
          error: compute.error ?? add.error,
          run: () => (cid ? add.run() : compute.run()),
        }}
        outcome={add.result && <p role="status">Added {add.result}.</p>}
      >
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
        <TextField label="Action name" maxLength={256} value={name} onInput={setName} />
        <TextField label="Action description" maxLength={1024} value={description} onInput={setDescription} />
      </Form>
    </Section>
  );
}
