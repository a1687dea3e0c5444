// The dashboard's shared pieces: loading what a page shows (useLoad), the states every page has
// (loading, empty, an error in words with its code and request id), lists (a table with each row's
// buttons, removal after a confirmation), forms (their fields, submit button, error and outcome),
// sections, a secret shown once with a copy button, and money as dollars. Everything is styled by
// class from app.css (the page's CSP allows no inline style).
import { cloneElement, type ComponentChildren, type InputHTMLAttributes, type VNode } from "preact";
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
              {r.map((cell, i) => (
                // data-label: the column's heading, which narrow screens show beside the cell (app.css).
                <td data-label={head[i] || undefined}>
                  <div class="cell">{cell}</div>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A column of a List: its heading, and its cell for an item. */
export type Column<T> = [head: string, cell: (item: T) => ComponentChildren];

/** A button in each row of a List, named for its row: "<names> <the row's name>" (`names` is the label unless said). */
export type RowButton<T> = {
  label: string;
  names?: string;
  onClick(item: T): unknown;
  danger?: boolean;
  disabled?: boolean;
  /** For a button that opens something about its row: whether it is open. */
  expanded?(item: T): boolean;
};

/**
 * What a page lists: `empty` when there is nothing, otherwise a table of `columns` with each row's
 * `buttons` last, named by `name(item)`; with `remove`, a Remove button too, which asks
 * `remove.ask(item)` first and then does `remove.run(item)`, its error shown under the list.
 */
export function List<T>({
  items,
  empty,
  caption,
  columns,
  name = () => "",
  buttons = [],
  remove,
}: {
  items: T[];
  empty: ComponentChildren;
  caption: string;
  columns: Column<NoInfer<T>>[];
  name?: (item: NoInfer<T>) => string;
  buttons?: RowButton<NoInfer<T>>[];
  remove?: { ask(item: NoInfer<T>): string; run(item: NoInfer<T>): Promise<unknown> };
}) {
  const removal = useAction(async (item: T) => {
    if (remove && confirm(remove.ask(item))) await remove.run(item);
  });
  const all: RowButton<T>[] = remove
    ? [...buttons, { label: "Remove", danger: true, disabled: removal.busy, onClick: (item) => void removal.run(item) }]
    : buttons;
  const rowButtons = (item: T) => {
    const shown = all.map((b) => (
      <button
        type="button"
        class={b.danger ? "small danger" : "small secondary"}
        disabled={b.disabled}
        aria-expanded={b.expanded?.(item)}
        aria-label={`${b.names ?? b.label} ${name(item)}`}
        onClick={() => b.onClick(item)}
      >
        {b.label}
      </button>
    ));
    return shown.length === 1 ? shown[0] : <span class="row">{shown}</span>;
  };
  return (
    <>
      {items.length === 0 ? (
        <Empty>{empty}</Empty>
      ) : (
        <Table
          caption={caption}
          head={[...columns.map(([head]) => head), ...(all.length ? [""] : [])]}
          rows={items.map((item) => [
            ...columns.map(([, cell]) => cell(item)),
            ...(all.length ? [rowButtons(item)] : []),
          ])}
        />
      )}
      {remove && <ErrorNote error={removal.error} />}
    </>
  );
}

/** A part of a page, named by its heading. */
export function Section({
  id,
  title,
  children,
}: {
  id: string;
  title: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

/**
 * A form that runs `action` instead of navigating: its fields, then its submit button (disabled
 * while the action is busy, saying `busyLabel` then when given; beside a Cancel button when there
 * is `onCancel`, in a row whenever `row`), the action's error, and `outcome`. In a panel unless
 * `plain`; named by the heading `labelledBy` when it is not its section's own.
 */
export function Form({
  children,
  submit,
  busyLabel,
  action,
  onCancel,
  row,
  outcome,
  labelledBy,
  plain,
}: {
  children: ComponentChildren;
  submit: string;
  busyLabel?: string;
  action: { run(): unknown; busy: boolean; error?: Shown | undefined };
  onCancel?: (() => void) | undefined;
  row?: boolean;
  outcome?: ComponentChildren;
  labelledBy?: string;
  plain?: boolean;
}) {
  const button = (
    <button type="submit" disabled={action.busy}>
      {action.busy && busyLabel ? busyLabel : submit}
    </button>
  );
  return (
    <form
      aria-labelledby={labelledBy}
      class={plain ? undefined : "panel"}
      onSubmit={(e) => {
        e.preventDefault();
        void action.run();
      }}
    >
      {children}
      {row || onCancel ? (
        <div class="row">
          {button}
          {onCancel && (
            <button type="button" class="secondary" onClick={onCancel}>
              Cancel
            </button>
          )}
        </div>
      ) : (
        button
      )}
      <ErrorNote error={action.error} />
      {outcome}
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

/** A labelled text input: `value`, and `onInput` with each change; the rest are the input's own attributes. */
export function TextField({
  label,
  hint,
  value,
  onInput,
  ...input
}: {
  label: string;
  hint?: string;
  value: string;
  onInput(value: string): void;
  type?: "url" | "number" | "date" | "password" | "email";
  inputMode?: "numeric" | "decimal" | "url";
  required?: boolean;
  maxLength?: number;
  min?: number;
  step?: number | string;
  spellcheck?: boolean;
  autoComplete?: string;
}) {
  return (
    <Field label={label} hint={hint}>
      <input
        {...(input as InputHTMLAttributes<HTMLInputElement>)}
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
      />
    </Field>
  );
}

/** A secret the service shows this once (`what` it is, then `note`), with a copy button; `children` after. */
export function ShownOnce({
  what,
  note,
  value,
  testId,
  copy,
  children,
}: {
  what: string;
  note: ComponentChildren;
  value: string;
  testId: string;
  copy: string;
  children?: ComponentChildren;
}) {
  return (
    <div class="panel" role="status">
      <p>
        <strong>{what}</strong> {note}
      </p>
      <p class="row">
        <code class="mono" data-testid={testId}>
          {value}
        </code>
        <CopyButton text={value} label={copy} />
      </p>
      {children}
    </div>
  );
}

/** A usage key just made, shown this once; `status` says more of it, `children` after. */
export function NewKey({
  value,
  status,
  children,
}: {
  value: string;
  status?: ComponentChildren;
  children?: ComponentChildren;
}) {
  const note = status ? <>keep it somewhere safe. {status}</> : "keep it somewhere safe.";
  return (
    <ShownOnce what="The new key, shown this once:" note={note} value={value} testId="new-key" copy="Copy key">
      {children}
    </ShownOnce>
  );
}

/** A button that copies `text`, named "`label`: `text`"; it shows `label`, or "Copy" when `short`. */
export function CopyButton({ text, label = "Copy", short }: { text: string; label?: string; short?: boolean }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      class={short ? "small secondary" : "small"}
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
      {done ? "Copied" : short ? "Copy" : label}
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

/** `value` with its middle left out when it is longer than `keep` characters: "0x5fbdb2…0aa3". */
export function middle(value: string, keep = 18): string {
  if (value.length <= keep) return value;
  const head = Math.ceil((keep - 1) / 2) + 1;
  return `${value.slice(0, head)}…${value.slice(-(keep - head))}`;
}

/**
 * An id, address, hash or CID: shortened in the middle (whole in its title and for a screen reader),
 * never wider than its place, with a copy button that copies it whole ("`copy`: <value>").
 */
export function Hex({
  value,
  copy = "Copy",
  keep,
  testId,
}: {
  value: string;
  copy?: string;
  keep?: number;
  testId?: string;
}) {
  return (
    <span class="hex">
      <code class="mono" title={value} data-testid={testId} data-value={value}>
        <span aria-hidden="true">{middle(value, keep)}</span>
        <span class="visually-hidden">{value}</span>
      </code>
      <CopyButton text={value} label={copy} short />
    </span>
  );
}

/** Wei (decimal text) as ether for people: "1.5 ETH", at most 6 decimals, "< 0.000001 ETH" for dust. */
export function ether(eth: string): string {
  const [whole = "0", fraction = ""] = eth.split(".");
  const kept = fraction.slice(0, 6).replace(/0+$/, "");
  if (whole === "0" && !kept && fraction.replace(/0/g, "")) return "< 0.000001 ETH";
  return `${whole}${kept ? `.${kept}` : ""} ETH`;
}

/** "3 min ago", "2 h ago", "5 d ago", or the date; `iso` an ISO 8601 time. */
export function ago(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 30 * 86_400) return `${Math.floor(s / 86_400)} d ago`;
  return new Date(iso).toISOString().slice(0, 10);
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
