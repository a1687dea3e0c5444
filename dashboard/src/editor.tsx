// A code editor light enough for the dashboard's budget: a plain <textarea> (so typing, selection,
// undo and screen readers work as in any text field) over a <pre> that Prism highlights, scrolled
// together. Prism escapes the code it highlights, so its HTML carries no markup from the script.
import Prism from "prismjs";
import { useRef } from "preact/hooks";

export function CodeEditor({
  label,
  value,
  onInput,
  rows = 12,
}: {
  label: string;
  value: string;
  onInput(v: string): void;
  rows?: number;
}) {
  const pre = useRef<HTMLPreElement>(null);
  const html = `${Prism.highlight(value, Prism.languages.javascript as Prism.Grammar, "javascript")}\n`;
  return (
    <div class="editor">
      <pre ref={pre} aria-hidden="true" class="editor-highlight">
        <code dangerouslySetInnerHTML={{ __html: html }} />
      </pre>
      <textarea
        aria-label={label}
        class="editor-input"
        rows={rows}
        spellcheck={false}
        autoCapitalize="off"
        autoComplete="off"
        value={value}
        onInput={(e) => onInput(e.currentTarget.value)}
        onScroll={(e) => {
          if (pre.current) {
            pre.current.scrollTop = e.currentTarget.scrollTop;
            pre.current.scrollLeft = e.currentTarget.scrollLeft;
          }
        }}
        onKeyDown={(e) => {
          // Tab indents inside the editor; Escape then Tab leaves it (keyboard users are never trapped).
          if (e.key === "Tab" && !e.shiftKey && !(e.currentTarget as HTMLTextAreaElement).dataset.leave) {
            e.preventDefault();
            const t = e.currentTarget;
            const at = t.selectionStart;
            onInput(`${t.value.slice(0, at)}  ${t.value.slice(t.selectionEnd)}`);
            requestAnimationFrame(() => t.setSelectionRange(at + 2, at + 2));
          } else if (e.key === "Escape") (e.currentTarget as HTMLTextAreaElement).dataset.leave = "1";
          else delete (e.currentTarget as HTMLTextAreaElement).dataset.leave;
        }}
      />
    </div>
  );
}
