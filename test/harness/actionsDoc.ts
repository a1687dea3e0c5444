// The examples of docs/actions.md, as the two suites that check them read them: every `js` block
// is an example, and the `json` block right after it (blank lines between them only) is what its
// run answers (docs/actions.md, "How to read the examples"). A `js` block without its `json`
// block, a `json` block that follows no example, a malformed expectation or a code block in a
// language the page does not use for examples is an error here, so a suite that reads the page
// fails rather than skip an example.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const ACTIONS_DOC_PATH = fileURLToPath(new URL("../../docs/actions.md", import.meta.url));

/** The fields an example's `json` block may have: the request's js_params and the answer's fields. */
export type ExpectedRun = {
  js_params?: unknown;
  has_error: boolean;
  response: unknown;
  error?: { code: string; message: string; stack?: string };
  logs?: string;
};

export type DocExample = {
  /** 1-based, in the page's order. */
  index: number;
  /** The heading the example sits under. */
  heading: string;
  /** The line of the page where the example's code starts (after its fence). */
  line: number;
  code: string;
  expected: ExpectedRun;
};

export type CodeBlock = { lang: string; content: string; line: number; endLine: number; heading: string };

/** Languages the page may use besides js and json; none of them is run. */
const OTHER_LANGUAGES = new Set(["ts", "sh", "jsonc"]);
const EXPECTED_KEYS = new Set(["js_params", "has_error", "response", "error", "logs"]);

/** The fenced code blocks of a Markdown text, each with the heading above it. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split("\n");
  const blocks: CodeBlock[] = [];
  let heading = "";
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heads = /^#{1,6}\s+(.*)$/.exec(line);
    if (heads) {
      heading = (heads[1] as string).replaceAll("`", "").trim();
      continue;
    }
    const open = /^```(\S*)\s*$/.exec(line);
    if (!open) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end] as string)) end++;
    if (end >= lines.length) throw new Error(`docs/actions.md:${i + 1}: a code block is never closed`);
    blocks.push({
      lang: open[1] as string,
      content: lines.slice(start, end).join("\n"),
      line: start + 1,
      endLine: end + 1,
      heading,
    });
    i = end;
  }
  return blocks;
}

function parseExpected(block: CodeBlock): ExpectedRun {
  const where = `docs/actions.md:${block.line}`;
  let value: unknown;
  try {
    value = JSON.parse(block.content);
  } catch (err) {
    throw new Error(`${where}: the json block is not JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new Error(`${where}: the json block must be an object`);
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o))
    if (!EXPECTED_KEYS.has(key))
      throw new Error(`${where}: unknown field ${key} (allowed: ${[...EXPECTED_KEYS].join(", ")})`);
  if (typeof o.has_error !== "boolean") throw new Error(`${where}: has_error (true or false) is required`);
  if (!("response" in o)) throw new Error(`${where}: response is required`);
  if (o.has_error) {
    if (o.response !== null) throw new Error(`${where}: a failed run's response is null`);
    const e = o.error as Record<string, unknown> | undefined;
    if (!e || typeof e.code !== "string" || typeof e.message !== "string")
      throw new Error(`${where}: a failed run shows its error's code and message`);
    for (const key of Object.keys(e))
      if (!["code", "message", "stack"].includes(key)) throw new Error(`${where}: unknown error field ${key}`);
  } else if ("error" in o) {
    throw new Error(`${where}: a run without error shows no error`);
  }
  if ("logs" in o && typeof o.logs !== "string") throw new Error(`${where}: logs is a string`);
  return o as ExpectedRun;
}

/** Every example of a page, each with its expected answer; throws on any block that breaks the convention. */
export function examplesOf(markdown: string): DocExample[] {
  const blocks = codeBlocks(markdown);
  const lines = markdown.split("\n");
  const examples: DocExample[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const block = blocks[i] as CodeBlock;
    if (block.lang === "json")
      throw new Error(`docs/actions.md:${block.line}: a json block that follows no js example`);
    if (block.lang !== "js") {
      if (!OTHER_LANGUAGES.has(block.lang))
        throw new Error(
          `docs/actions.md:${block.line}: a code block in "${block.lang}": examples are js, followed by json; other blocks are ${[...OTHER_LANGUAGES].join(", ")}`,
        );
      continue;
    }
    const next = blocks[i + 1];
    const between = next ? lines.slice(block.endLine, next.line - 2) : [];
    if (next?.lang !== "json" || between.some((l) => l.trim() !== "")) {
      throw new Error(
        `docs/actions.md:${block.line}: the js example is not followed by its json block (blank lines only between them)`,
      );
    }
    examples.push({
      index: examples.length + 1,
      heading: block.heading,
      line: block.line,
      code: block.content,
      expected: parseExpected(next),
    });
    i++;
  }
  return examples;
}

export function readActionsDoc(): { markdown: string; examples: DocExample[] } {
  const markdown = readFileSync(ACTIONS_DOC_PATH, "utf8");
  return { markdown, examples: examplesOf(markdown) };
}
