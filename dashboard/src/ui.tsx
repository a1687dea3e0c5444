// The dashboard's shared pieces: loading what a page shows (useLoad), the states every page has
// (loading, empty, an error in words with its code and request id), tables, labelled fields, a copy
// button, and money as dollars. Everything is styled by class from app.css (the page's CSP allows
// no inline style).
import { cloneElement, type ComponentChildren, type VNode } from "preact";
import { useCallback, useEffect, useId, useState } from "preact/hooks";

/** An error as the dashboard shows it: the SDK's SigilError carries the service's code and request id. */
export type Shown = { message: string; code?: string; requestId?: string };

export function shown(error: unknown): Shown {
  const e = error as { message?: unknown; code?: unknown; requestId?: unknown };
  return {
    message: typeof e?.message === "string" && e.message ? e.message : String(error),
    ...(typeof e?.code === "string" ? { code: e.code } : {}),
    ...(typeof e?.requestId === "string" ? { requestId: e.requestId } : {}),
  };
}

export type Loaded<T> = { data: T | undefined; error: Shown | undefined; loading: boolean; reload(): void };

/** Runs `load` now and on `reload()`; what it answered, or the error it threw. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: Shown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: unknown) => live && setState({ error: shown(error), loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [round, ...deps]);
  const reload = useCallback(() => setRound((r) => r + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

export function ErrorNote({ error }: { error: Shown | undefined }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <strong>{error.message}</strong>
      {error.code && (
        <span class="error-meta">
          {" "}
          code <code>{error.code}</code>
        </span>
      )}
      {error.requestId && (
        <span class="error-meta">
          {" "}
          · request <code>{error.requestId}</code>
        </span>
      )}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="empty">{children}</p>;
}

/** What a page shows of a load: its spinner, its error, or `children(data)`. */
export function Load<T>({
  loaded,
  what,
  children,
}: {
  loaded: Loaded<T>;
  what: string;
  children: (data: T) => ComponentChildren;
}) {
  if (loaded.error) return <ErrorNote error={loaded.error} />;
  if (loaded.data === undefined) return <Loading what={what} />;
  return <>{children(loaded.data)}</>;
}

export function Table({ caption, head, rows }: { caption: string; head: string[]; rows: ComponentChildren[][] }) {
  return (
    <div class="table-wrap">
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {head.map((h) => (
              <th scope="col">{h}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              {r.map((cell) => (
                <td>{cell}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A form that does `onSubmit` instead of navigating: in a panel unless `plain`; named by the heading
 * `labelledBy` when it is not its section's own.
 */
export function Form({
  onSubmit,
  children,
  labelledBy,
  plain,
}: {
  onSubmit: () => unknown;
  children: ComponentChildren;
  labelledBy?: string;
  plain?: boolean;
}) {
  return (
    <form
      aria-labelledby={labelledBy}
      class={plain ? undefined : "panel"}
      onSubmit={(e) => {
        e.preventDefault();
        void onSubmit();
      }}
    >
      {children}
    </form>
  );
}

/** A labelled control; its hint is outside the label (so the control's name is the label alone) and linked by aria-describedby. */
export function Field({ label, children, hint }: { label: string; children: VNode; hint?: string }) {
  const hintId = useId();
  return (
    <div class="field">
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the control is the child this label wraps */}
      <label>
        <span class="field-label">{label}</span>
        {hint ? cloneElement(children, { "aria-describedby": hintId }) : children}
      </label>
      {hint && (
        <span class="field-hint" id={hintId}>
          {hint}
        </span>
      )}
    </div>
  );
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class="small"
      aria-label={`${label}: ${text}`}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          setDone(true);
          setTimeout(() => setDone(false), 1500);
        } catch {
          // The clipboard may be refused (no permission): the text stays selectable on the page.
        }
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

/** Cents as dollars: 1234 → "$12.34", -5 → "-$0.05". */
export function dollars(cents: number): string {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(Math.trunc(cents));
  return `${sign}$${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")}`;
}

/** A long hex value shortened for a table, whole in its title. */
export function Short({ value }: { value: string }) {
  return (
    <code title={value} class="mono">
      {value.length > 14 ? `${value.slice(0, 8)}…${value.slice(-4)}` : value}
    </code>
  );
}

/** Runs an action from a form or button, showing its error, and what it answered until the next. */
export function useAction<A extends unknown[], T>(act: (...args: A) => Promise<T>) {
  const [state, setState] = useState<{ busy: boolean; error?: Shown; result?: T }>({ busy: false });
  const run = async (...args: A): Promise<T | undefined> => {
    setState({ busy: true });
    try {
      const result = await act(...args);
      setState({ busy: false, result });
      return result;
    } catch (error) {
      setState({ busy: false, error: shown(error) });
      return undefined;
    }
  };
  return { ...state, run, clear: () => setState({ busy: false }) };
}
