// Wallets: the account's wallets (keys derived inside the enclave on demand, never stored), each
// address shortened with a copy button and a link to its own page (wallet.tsx: balance, guardrail,
// groups, signatures), a "guarded" badge on those with a guardrail (one get_wallet_guardrail each,
// so only for an account of at most GUARD_BADGES wallets), and a form that creates one.
import { useState } from "preact/hooks";
import type { PageProps } from "../session.ts";
import { collect } from "../../../sdk/src/reads.ts";
import { Form, Hex, List, Load, TextField, useAction, useLoad, type Column } from "../ui.tsx";

/** The most wallets whose guardrails the list reads, one request each, for their badges. */
export const GUARD_BADGES = 20;

export function Wallets({ session }: PageProps) {
  const loaded = useLoad(() => collect(session.client.all.listWallets()));
  const wallets = loaded.data;
  // Which wallets have a guardrail, by address; undefined while unknown (or for more than GUARD_BADGES wallets).
  const guarded = useLoad(async () => {
    if (!wallets || wallets.length > GUARD_BADGES) return undefined;
    const answers = await Promise.all(
      wallets.map((w) =>
        session.client.getWalletGuardrail({ wallet_address: w.wallet_address }).then(
          (g) => [w.wallet_address, g.guardrail_hash !== null] as const,
          () => [w.wallet_address, undefined] as const,
        ),
      ),
    );
    return new Map(answers);
  }, [wallets]);
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
              ["Solana", (w) => (w.solana_address ? <Hex value={w.solana_address} copy="Copy Solana address" /> : "—")],
              ["Description", (w) => w.description || "—"],
              ...(wallets.length <= GUARD_BADGES
                ? [
                    [
                      "Guardrail",
                      (w: (typeof wallets)[number]) =>
                        guarded.data?.get(w.wallet_address) ? (
                          <span class="badge" title="What it may sign is limited: its page says what">
                            guarded
                          </span>
                        ) : guarded.data?.get(w.wallet_address) === false ? (
                          "none"
                        ) : guarded.data?.has(w.wallet_address) ? (
                          // Its guardrail could not be read: its page says why.
                          "?"
                        ) : (
                          "…"
                        ),
                    ] satisfies Column<(typeof wallets)[number]>,
                  ]
                : []),
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
              Created <code class="mono">{create.result.wallet_address}</code> (id {create.result.wallet_id}), on Solana{" "}
              <span class="mono">{create.result.solana_address}</span>.{" "}
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
