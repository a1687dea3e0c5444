// Keys, for a ChainSecured account signed in with its admin wallet: a usage key registered by
// signature. The wallet signs AddUsageApiKey (EIP-712), the service derives the key in the enclave
// and answers it with its hash (add_usage_api_key_with_signature); then the wallet itself sends
// setUsageApiKey to the AccountConfig contract with the key's name, cap and groups, since a
// wallet-owned account's permissions are written by its admin, not by the service. The key is shown
// once; it works as soon as the transaction is mined. Existing keys are on chain: the Audit log
// lists their UsageApiKeySet events.
import { useState } from "preact/hooks";
import { createClient, custom, type Address, type Hex } from "viem";
import { waitForTransactionReceipt } from "viem/actions";
import { anonymous, type Session } from "../session.ts";
import { accountConfig, signSigilTypedData } from "../../../sdk/src/index.ts";
import { Form, NewKey, Short, TextField, useAction } from "../ui.tsx";

type WalletSession = Extract<Session, { kind: "wallet" }>;

/** "1, 2" → [1n, 2n]; anything but group ids is refused before the wallet is asked to sign. */
function groupIds(text: string): bigint[] {
  const ids = text.split(/[\s,]+/).filter(Boolean);
  for (const id of ids)
    if (!/^\d{1,20}$/.test(id)) throw new Error(`Run in groups: "${id}" is not a group id (a number)`);
  return ids.map(BigInt);
}

type Grant = { name: string; groups: string; cap: string };
type Made = { key: string; hash: Hex };

function checkGrant(grant: Grant): void {
  groupIds(grant.groups);
  if (grant.cap !== "" && !/^\d{1,12}$/.test(grant.cap))
    throw new Error("Spend cap: a whole number of cents (empty for none)");
}

async function chainConfig() {
  const config = await anonymous().getNodeChainConfig();
  if (!config.contract_address)
    throw new Error("this deployment names no AccountConfig contract (GET /core/v1/get_node_chain_config)");
  return { chainId: config.chain_id, contract: config.contract_address as Address };
}

/** Step 1: the wallet signs AddUsageApiKey; the service derives the key and answers it once, with its hash. */
async function newKey(session: WalletSession): Promise<Made> {
  const { chainId } = await chainConfig();
  const made = await anonymous().addUsageApiKeyWithSignature(
    await signSigilTypedData({ signer: session.signer, primaryType: "AddUsageApiKey", chainId }),
  );
  return { key: made.usage_api_key, hash: made.usage_api_key_hash as Hex };
}

/** Step 2: the wallet grants the key on chain (setUsageApiKey): its name, cap and the groups it may run in. */
async function grantKey(session: WalletSession, made: Made, grant: Grant): Promise<Hex> {
  const { contract } = await chainConfig();
  // The one read accountConfig needs, on a bare client: createPublicClient would bring every public action into the bundle.
  const reader = createClient({ transport: custom(session.provider), pollingInterval: 1_000 });
  const publicClient = { waitForTransactionReceipt: (args: { hash: Hex }) => waitForTransactionReceipt(reader, args) };
  const { transactionHash } = await accountConfig({
    walletClient: session.signer,
    publicClient,
    address: contract,
  }).setUsageApiKey({
    keyHash: made.hash,
    name: grant.name,
    executeInGroups: groupIds(grant.groups),
    ...(grant.cap === "" ? {} : { spendLimitCents: BigInt(grant.cap) }),
  });
  return transactionHash;
}

export function WalletKeys({ session }: { session: WalletSession }) {
  const [name, setName] = useState("");
  const [groups, setGroups] = useState("");
  const [cap, setCap] = useState("");
  // The key made in step 1 stays on the page until it is granted: a refused or failed transaction
  // can be sent again for the same key, which is never lost halfway.
  const [made, setMade] = useState<Made | undefined>();
  const grant = (): Grant => ({ name: name.trim(), groups, cap: cap.trim() });
  const granting = useAction((key: Made) => grantKey(session, key, grant()));
  const register = useAction(async () => {
    checkGrant(grant());
    granting.clear();
    const key = await newKey(session);
    setMade(key);
    await granting.run(key);
  });
  const busy = register.busy || granting.busy;
  return (
    <section aria-labelledby="register">
      <p>
        This account's usage keys are written on chain by its admin wallet. Registering one takes two signatures in your
        wallet: one that asks the service for a new key, and the transaction that grants it. Existing keys are in the{" "}
        <a href="#/audit">audit log</a>.
      </p>
      <h2 id="register">Register a usage key</h2>
      <Form
        plain
        submit="Register key"
        busyLabel="Waiting for the wallet…"
        action={{ busy, error: register.error ?? granting.error, run: () => register.run() }}
        outcome={
          made && (
            <NewKey
              value={made.key}
              status={
                granting.result ? (
                  <>
                    Granted by transaction <Short value={granting.result} />: it works now.
                  </>
                ) : granting.busy ? (
                  "Granting it on chain…"
                ) : (
                  "Not granted yet: it does nothing until the transaction is mined."
                )
              }
            >
              {granting.error && (
                <button type="button" class="secondary" disabled={busy} onClick={() => void granting.run(made)}>
                  Send the grant again
                </button>
              )}
            </NewKey>
          )
        }
      >
        <TextField label="Name" required maxLength={100} value={name} onInput={setName} />
        <TextField
          label="Run in groups"
          hint="Group ids, separated by commas; empty for none"
          inputMode="numeric"
          value={groups}
          onInput={setGroups}
        />
        <TextField label="Spend cap (cents)" hint="Empty for no cap" inputMode="numeric" value={cap} onInput={setCap} />
      </Form>
    </section>
  );
}
