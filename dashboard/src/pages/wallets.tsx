// Wallets: the account's wallets (keys derived inside the enclave on demand, never stored), each
// address shortened with a copy button and a link to its own page (wallet.tsx: balance, groups,
// signatures), and a form that creates one.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { Form, Hex, List, Load, TextField, useAction, useLoad } from "../ui.tsx";

export function Wallets({ session }: PageProps) {
  const loaded = useLoad(() => collect(session.client.all.listWallets()));
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
        {(wallets) => (
          <List
            items={wallets}
            empty="No wallets yet."
            caption="The account's wallets (id 0 is the Account Master Wallet)"
            columns={[
              ["Id", (w) => w.id],
              [
                "Name",
                (w) => (
                  <a href={`#/wallets/${w.wallet_address}`} title="Its balance, groups and signatures">
                    {w.name || (w.id === "0" ? "Account Master Wallet" : `wallet ${w.id}`)}
                  </a>
                ),
              ],
              ["Address", (w) => <Hex value={w.wallet_address} copy="Copy address" />],
              ["Description", (w) => w.description || "—"],
            ]}
          />
        )}
      </Load>
      <h2 id="new-wallet">Create a wallet</h2>
      <Form
        labelledBy="new-wallet"
        submit="Create wallet"
        busyLabel="Creating…"
        action={create}
        outcome={
          create.result && (
            <p role="status">
              Created <code class="mono">{create.result.wallet_address}</code> (id {create.result.wallet_id}).{" "}
              <a href={`#/wallets/${create.result.wallet_address}`}>Open it</a>
            </p>
          )
        }
      >
        <TextField label="Name" value={name} maxLength={256} onInput={setName} />
        <TextField label="Description" value={description} maxLength={1024} onInput={setDescription} />
      </Form>
    </>
  );
}
