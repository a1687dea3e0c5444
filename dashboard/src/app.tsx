// The dashboard's shell: sign-in (an API key, or a browser wallet for a ChainSecured account) or
// sign-up (a new account, its master key shown once, then signed in with it), the header naming the
// account (its name and id), the navigation, and one page per part of the account, chosen by the
// URL's hash (#/keys; #/wallets/<address> for one wallet) so that every page is a link and the edge
// serves one document.
import { useEffect, useState } from "preact/hooks";
import { Overview } from "./pages/overview.tsx";
import { Attestation } from "./pages/attestation.tsx";
import { Audit } from "./pages/audit.tsx";
import { Billing } from "./pages/billing.tsx";
import { Groups } from "./pages/groups.tsx";
import { Keys } from "./pages/keys.tsx";
import { Playground } from "./pages/playground.tsx";
import { Wallets } from "./pages/wallets.tsx";
import { WalletPage } from "./pages/wallet.tsx";
import { Transactions } from "./pages/transactions.tsx";
import { Webhooks } from "./pages/webhooks.tsx";
import {
  signInWithKey,
  signInWithWallet,
  signUp,
  resumeSession,
  signOut,
  type PageProps,
  type Session,
} from "./session.ts";
import {
  CopyButton,
  ErrorNote,
  Form,
  Hex,
  Loading,
  ShownOnce,
  shown,
  TextField,
  useAction,
  type Shown,
} from "./ui.tsx";
import type { FunctionComponent } from "preact";

type Page = {
  path: string;
  title: string;
  component: FunctionComponent<PageProps>;
  keyOnly?: boolean;
  /** The page for what the URL names after the path (#/wallets/<address>), and its title. */
  detail?: { title: string; component: FunctionComponent<PageProps> };
};

/** Every page, in the navigation's order. */
export const PAGES: Page[] = [
  { path: "overview", title: "Overview", component: Overview },
  { path: "keys", title: "Keys", component: Keys },
  {
    path: "wallets",
    title: "Wallets",
    component: Wallets,
    keyOnly: true,
    detail: { title: "Wallet", component: WalletPage },
  },
  { path: "groups", title: "Groups and actions", component: Groups, keyOnly: true },
  { path: "playground", title: "Playground", component: Playground, keyOnly: true },
  { path: "transactions", title: "Transactions", component: Transactions, keyOnly: true },
  { path: "billing", title: "Billing", component: Billing },
  { path: "audit", title: "Audit log", component: Audit },
  { path: "webhooks", title: "Webhooks", component: Webhooks },
  { path: "attestation", title: "Attestation", component: Attestation },
];

function currentPath(): string {
  return location.hash.replace(/^#\/?/, "") || "overview";
}

export function App() {
  const [session, setSession] = useState<Session | undefined>();
  const [resuming, setResuming] = useState(true);
  const [path, setPath] = useState(currentPath());

  useEffect(() => {
    resumeSession().then((s) => {
      setSession(s);
      setResuming(false);
    });
    const onHash = () => setPath(currentPath());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);

  if (resuming) return <Loading what="your session" />;
  if (!session) return <SignIn onSession={setSession} />;

  const pages = PAGES.filter((p) => !(p.keyOnly && session.kind !== "key"));
  const [first, ...rest] = path.split("/");
  const page = pages.find((p) => p.path === first) ?? pages[0]!;
  const param = page.path === first && rest.length ? decodeURIComponent(rest.join("/")) : undefined;
  const shownPage = param && page.detail ? page.detail : page;
  const Component = shownPage.component;
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Sigil</span>
        {session.kind === "key" ? (
          <div class="account" data-testid="account">
            <span class="account-name" data-testid="account-name">
              {session.account.account_name}
            </span>
            <span class="account-id">
              <span class="muted">Account</span>{" "}
              <Hex value={session.account.account_id} copy="Copy account id" keep={14} />
            </span>
            <span class="who">
              {session.keyKind === "master" ? "master key" : `usage key ${session.keyName ?? ""}`}
              {session.account.managed ? "" : " · ChainSecured"}
            </span>
          </div>
        ) : (
          <div class="account">
            <span class="who">wallet {session.address}</span>
            <CopyButton text={session.address} label="Copy address" short />
          </div>
        )}
        <button
          type="button"
          class="small"
          onClick={() => {
            signOut();
            setSession(undefined);
          }}
        >
          Sign out
        </button>
      </header>
      <nav aria-label="Sections">
        <ul>
          {pages.map((p) => (
            <li>
              <a href={`#/${p.path}`} aria-current={p === page && !param ? "page" : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <h1>{shownPage.title}</h1>
        <Component session={session} param={param} />
      </main>
    </div>
  );
}

function SignIn({ onSession }: { onSession(s: Session): void }) {
  const [creating, setCreating] = useState(false);
  return creating ? (
    <SignUp onSession={onSession} onCancel={() => setCreating(false)} />
  ) : (
    <SignInForm onSession={onSession} onCreate={() => setCreating(true)} />
  );
}

/** Sign-up: a name (and an email for receipts), the new master key shown once, then the dashboard signed in with it. */
function SignUp({ onSession, onCancel }: { onSession(s: Session): void; onCancel(): void }) {
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [saved, setSaved] = useState(false);
  const create = useAction(() => signUp(name.trim(), email.trim()));
  const enter = useAction(async (apiKey: string) => onSession(await signInWithKey(apiKey)));
  const made = create.result;
  return (
    <main id="main" class="signin">
      <h1>Create a Sigil account</h1>
      {made ? (
        <>
          <ShownOnce
            what="Your account's master key, shown this once:"
            note="it is the account's password and cannot be recovered. Keep it in a password manager; it is not stored in this browser beyond this tab."
            value={made.apiKey}
            testId="new-master-key"
            copy="Copy key"
          >
            <p class="muted">
              Account id <Hex value={made.accountId} copy="Copy account id" />
            </p>
            <label class="row">
              <input type="checkbox" checked={saved} onChange={(e) => setSaved(e.currentTarget.checked)} />I have saved
              the key
            </label>
          </ShownOnce>
          <button type="button" disabled={!saved || enter.busy} onClick={() => void enter.run(made.apiKey)}>
            {enter.busy ? "Signing in…" : "Continue to the dashboard"}
          </button>
          <ErrorNote error={enter.error} />
        </>
      ) : (
        <Form
          plain
          submit="Create account"
          busyLabel="Creating… (a transaction on the chain)"
          action={create}
          onCancel={onCancel}
        >
          <TextField label="Account name" required maxLength={128} value={name} onInput={setName} />
          <TextField
            label="Email (optional)"
            hint="For Stripe's receipts when you buy credit; never shown to anyone else."
            type="email"
            autoComplete="email"
            maxLength={254}
            value={email}
            onInput={setEmail}
          />
        </Form>
      )}
    </main>
  );
}

function SignInForm({ onSession, onCreate }: { onSession(s: Session): void; onCreate(): void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<Shown | undefined>();
  const [busy, setBusy] = useState(false);
  const attempt = async (how: () => Promise<Session>) => {
    setBusy(true);
    setError(undefined);
    try {
      onSession(await how());
    } catch (e) {
      setError(shown(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>Sign in to Sigil</h1>
      <Form plain submit="Sign in with key" action={{ busy, run: () => attempt(() => signInWithKey(key.trim())) }}>
        <TextField
          label="API key"
          hint="Your account's master key or a usage key. It stays in this tab only."
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={setKey}
        />
      </Form>
      <p class="or">or</p>
      <button type="button" disabled={busy} onClick={() => void attempt(() => signInWithWallet())}>
        Sign in with a browser wallet
      </button>
      <p class="muted">A wallet signs in to a ChainSecured account it administers: its balance, billing and history.</p>
      <ErrorNote error={error} />
      <h2 id="new">New to Sigil?</h2>
      <button type="button" class="secondary" disabled={busy} onClick={onCreate}>
        Create an account
      </button>
    </main>
  );
}
