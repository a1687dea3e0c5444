// Wallets: the account's wallets (keys derived inside the enclave on demand, never stored), each
// address with a copy button, and a form that creates one.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import type { PageItem, SigilClient } from "../../../sdk/src/index.ts";
import { CopyButton, Empty, ErrorNote, Field, Form, Load, Table, useAction, useLoad } from "../ui.tsx";

async function allWallets(client: SigilClient): Promise<Array<PageItem<"listWallets">>> {
  const wallets: Array<PageItem<"listWallets">> = [];
  for await (const w of client.all.listWallets()) wallets.push(w);
  return wallets;
}

export function Wallets({ session }: PageProps) {
  const loaded = useLoad(() => allWallets(session.client));
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const create = useAction(async () => {
    const made = await session.client.createWallet({ name: name.trim(), description: description.trim() });
    setName("");
    setDescription("");
    loaded.reload();
    return made;
  });
  return (
    <>
      <Load loaded={loaded} what="wallets">
        {(wallets) =>
          wallets.length === 0 ? (
            <Empty>No wallets yet.</Empty>
          ) : (
            <Table
              caption="The account's wallets (id 0 is the Account Master Wallet)"
              head={["Id", "Address", "Name", "Description"]}
              rows={wallets.map((w) => [
                w.id,
                <span class="row">
                  <code class="mono">{w.wallet_address}</code>
                  <CopyButton text={w.wallet_address} label="Copy address" />
                </span>,
                w.name || "—",
                w.description || "—",
              ])}
            />
          )
        }
      </Load>
      <h2 id="new-wallet">Create a wallet</h2>
      <Form labelledBy="new-wallet" onSubmit={() => create.run()}>
        <Field label="Name">
          <input value={name} maxLength={256} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Description">
          <input value={description} maxLength={1024} onInput={(e) => setDescription(e.currentTarget.value)} />
        </Field>
        <button type="submit" disabled={create.busy}>
          {create.busy ? "Creating…" : "Create wallet"}
        </button>
        <ErrorNote error={create.error} />
        {create.result && (
          <p role="status">
            Created <code class="mono">{create.result.wallet_address}</code> (id {create.result.wallet_id}).
          </p>
        )}
      </Form>
    </>
  );
}
