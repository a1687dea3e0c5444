// The dashboard's shell: sign-in (an API key, or a browser wallet for a ChainSecured account), the
// navigation, and one page per part of the account, chosen by the URL's hash (#/keys) so that every
// page is a link and the edge serves one document.
import { useEffect, useState } from "preact/hooks";
import { Overview } from "./pages/overview.tsx";
import { Attestation } from "./pages/attestation.tsx";
import { Audit } from "./pages/audit.tsx";
import { Billing } from "./pages/billing.tsx";
import { Groups } from "./pages/groups.tsx";
import { Keys } from "./pages/keys.tsx";
import { Playground } from "./pages/playground.tsx";
import { Wallets } from "./pages/wallets.tsx";
import { Webhooks } from "./pages/webhooks.tsx";
import { signInWithKey, signInWithWallet, resumeSession, signOut, type PageProps, type Session } from "./session.ts";
import { ErrorNote, Form, Loading, shown, TextField, type Shown } from "./ui.tsx";
import type { FunctionComponent } from "preact";

type Page = { path: string; title: string; component: FunctionComponent<PageProps>; keyOnly?: boolean };

/** Every page, in the navigation's order. */
export const PAGES: Page[] = [
  { path: "overview", title: "Overview", component: Overview },
  { path: "keys", title: "Keys", component: Keys },
  { path: "wallets", title: "Wallets", component: Wallets, keyOnly: true },
  { path: "groups", title: "Groups and actions", component: Groups, keyOnly: true },
  { path: "playground", title: "Playground", component: Playground, keyOnly: true },
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
  const page = pages.find((p) => p.path === path) ?? pages[0]!;
  const Component = page.component;
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">Sigil</span>
        <span class="who">
          {session.kind === "key"
            ? session.keyKind === "master"
              ? "master key"
              : `usage key ${session.keyName ?? ""}`
            : `wallet ${session.address}`}
        </span>
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
              <a href={`#/${p.path}`} aria-current={p === page ? "page" : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        <h1>{page.title}</h1>
        <Component session={session} />
      </main>
    </div>
  );
}

function SignIn({ onSession }: { onSession(s: Session): void }) {
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
    </main>
  );
}
