// Every pointer in a comment resolves inside the repository: a `something.md` a comment names is a
// file (from the repository's root or from the commenting file's own folder), and a section it
// names — `(path.md, Section)` or `(path.md, "Section")` — is a heading of that file. The design
// lives in docs/design/ (docs/design/README.md); a comment that points elsewhere points at nothing.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, relative, resolve, sep } from "node:path";
import { describe, expect, it } from "vitest";

const root = resolve(import.meta.dirname, "../..");

/** The source files whose comments are checked, by extension. */
const EXTENSIONS = new Set([".ts", ".tsx", ".js", ".mjs", ".sol", ".css", ".toml"]);

/**
 * Tracked files left out on purpose, each with its reason. Empty today: add a file here only when
 * it quotes markdown paths that are not pointers (a fixture that is itself a document's text).
 */
const EXCLUDED: Record<string, string> = {
  "test/unit/docPointers.test.ts":
    "its comments show the pointer forms it checks with made-up names (something.md, path.md)",
};

/** A comment's text, markers stripped and lines joined with one space, and where each part came from. */
export type CommentBlock = { text: string; lineAt: (offset: number) => number };

/** A pointer that does not resolve: the file, the line and why. */
export type Problem = { file: string; line: number; pointer: string; why: string };

/** Words after which a `/` starts a regular expression rather than a division. */
const REGEX_AFTER_WORD = new Set(
  "return typeof case do else in of new delete void throw instanceof yield await".split(" "),
);

/**
 * The comments of a TypeScript or JavaScript file, as [start, end) ranges. A scanner, not a parser
 * (TypeScript 7 has no JavaScript API): it skips strings, template literals (their `${…}` read as
 * code) and regular expressions (a `/` where an expression may start), which is all it takes to
 * tell a comment from code that looks like one.
 */
export function scriptCommentRanges(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  const templates: number[] = []; // open braces inside each `${` we are in
  let prev = "";
  let i = 0;
  const skipTemplate = () => {
    // i is just past a backtick or a `}` that closed a `${`
    while (i < text.length) {
      if (text[i] === "\\") i += 2;
      else if (text[i] === "`") return void i++;
      else if (text.startsWith("${", i)) {
        templates.push(0);
        i += 2;
        return;
      } else i++;
    }
  };
  while (i < text.length) {
    const c = text[i] ?? "";
    if (/\s/.test(c)) i++;
    else if (text.startsWith("//", i)) {
      const end = text.indexOf("\n", i);
      ranges.push([i, end < 0 ? text.length : end]);
      i = end < 0 ? text.length : end;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      ranges.push([i, end < 0 ? text.length : end + 2]);
      i = end < 0 ? text.length : end + 2;
    } else if (c === '"' || c === "'") {
      i++;
      while (i < text.length && text[i] !== c && text[i] !== "\n") i += text[i] === "\\" ? 2 : 1;
      i++;
      prev = "a";
    } else if (c === "`") {
      i++;
      skipTemplate();
      prev = "a";
    } else if (c === "/" && (prev === "" || /[(,=:[!&|?{};+\-*%<>~^]/.test(prev) || REGEX_AFTER_WORD.has(prev))) {
      let j = i + 1;
      let inClass = false;
      while (j < text.length && text[j] !== "\n" && (inClass || text[j] !== "/")) {
        if (text[j] === "\\") j++;
        else if (text[j] === "[") inClass = true;
        else if (text[j] === "]") inClass = false;
        j++;
      }
      if (text[j] === "/") {
        i = j + 1;
        while (/[a-z]/i.test(text[i] ?? "")) i++;
        prev = "a";
      } else {
        i++;
        prev = "/";
      }
    } else if (/[\w$]/.test(c)) {
      const word = /^[\w$]+/.exec(text.slice(i, i + 64))?.[0] ?? c;
      i += word.length;
      prev = word;
    } else {
      const open = templates.length - 1;
      if (c === "{" && open >= 0) templates[open] = (templates[open] ?? 0) + 1;
      if (c === "}" && open >= 0) {
        if (templates[open] === 0) {
          templates.pop();
          i++;
          skipTemplate();
          prev = "a";
          continue;
        }
        templates[open] = (templates[open] ?? 0) - 1;
      }
      prev = c;
      i++;
    }
  }
  return ranges;
}

/** The comments of a Solidity or CSS file: `//` (Solidity only) and `/* … *\/`, strings skipped. */
function cStyleCommentRanges(text: string, lineComments: boolean): [number, number][] {
  const ranges: [number, number][] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"' || c === "'") {
      i++;
      while (i < text.length && text[i] !== c && text[i] !== "\n") i += text[i] === "\\" ? 2 : 1;
      i++;
    } else if (lineComments && text.startsWith("//", i)) {
      const end = text.indexOf("\n", i);
      ranges.push([i, end < 0 ? text.length : end]);
      i = end < 0 ? text.length : end;
    } else if (text.startsWith("/*", i)) {
      const end = text.indexOf("*/", i + 2);
      ranges.push([i, end < 0 ? text.length : end + 2]);
      i = end < 0 ? text.length : end + 2;
    } else i++;
  }
  return ranges;
}

/** The comments of a TOML file: lines that start with `#`. */
function tomlCommentRanges(text: string): [number, number][] {
  const ranges: [number, number][] = [];
  let start = 0;
  for (const line of text.split("\n")) {
    const at = line.search(/\S/);
    if (at >= 0 && line[at] === "#") ranges.push([start + at, start + line.length]);
    start += line.length + 1;
  }
  return ranges;
}

/**
 * The comment blocks of `text`: consecutive comments with nothing but one line break between them
 * are one block, so a pointer that wraps onto the next comment line is read whole.
 */
export function commentBlocks(file: string, text: string): CommentBlock[] {
  const ext = extname(file);
  const ranges =
    ext === ".toml"
      ? tomlCommentRanges(text)
      : ext === ".sol" || ext === ".css"
        ? cStyleCommentRanges(text, ext === ".sol")
        : scriptCommentRanges(text);
  const merged: [number, number][] = [];
  for (const [start, end] of ranges) {
    const last = merged.at(-1);
    if (last && /^[ \t]*\r?\n[ \t]*$/.test(text.slice(last[1], start))) last[1] = end;
    else merged.push([start, end]);
  }
  const lineOf = (offset: number) => text.slice(0, offset).split("\n").length;
  return merged.map(([start, end]) => {
    const parts: { at: number; line: number }[] = [];
    let joined = "";
    const first = lineOf(start);
    text
      .slice(start, end)
      .split("\n")
      .forEach((raw, n) => {
        const line = raw
          .trim()
          .replace(/^(\/\/\/?|\/\*\*?|\*(?!\/)|#)/, "")
          .replace(/\*\/$/, "")
          .trim();
        if (line === "") return;
        parts.push({ at: joined.length, line: first + n });
        joined += `${line} `;
      });
    return {
      text: joined,
      lineAt: (offset) => parts.findLast((p) => p.at <= offset)?.line ?? first,
    };
  });
}

/** A heading's or a cited section's comparable form: no `#`s, quotes or backticks, lower case, single spaces. */
function normalize(title: string): string {
  return title
    .replace(/^#+\s*/, "")
    .replace(/\s+#+\s*$/, "")
    .replace(/[`"]/g, "")
    .replace(/\s+/g, " ")
    .trim()
    .toLowerCase();
}

/** The headings of a markdown text (outside fenced code blocks), normalized. */
export function headingsOf(markdown: string): Set<string> {
  const headings = new Set<string>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    else if (!fenced && /^#{1,6}\s/.test(line)) headings.add(normalize(line));
  }
  return headings;
}

const MD_PATH = String.raw`(?:\.{1,2}\/)*[\w-]+(?:[./][\w-]+)*\.md`;
/** A markdown file named anywhere in a comment (not inside a URL, which is blanked first). */
const FILE_POINTER = new RegExp(String.raw`(?<![\w./@-])(${MD_PATH})(?![\w-])`, "g");
/** `(path.md, Section)`, `(path.md, "Section")`, or the same after a `;` inside the parentheses. */
const SECTION_POINTER = new RegExp(String.raw`[(;]\s*(${MD_PATH}),\s*(?:"([^"]+)"|([^\s"(),;:][^(),;:]*))`, "g");

/** Where `pointer`, named in `file`, resolves inside the repository: from the root, else from the file's folder. */
function resolvePointer(repoRoot: string, file: string, pointer: string): string | undefined {
  for (const base of [repoRoot, dirname(join(repoRoot, file))]) {
    const path = resolve(base, pointer);
    if (!path.startsWith(repoRoot + sep)) continue;
    if (existsSync(path) && statSync(path).isFile()) return path;
  }
  return undefined;
}

/**
 * The pointers of one file's comments that do not resolve. `read` gives a markdown file's text
 * (the repository's, in the test; a stand-in, in the test of this check).
 */
export function checkComments(
  repoRoot: string,
  file: string,
  text: string,
  read: (path: string) => string = (path) => readFileSync(path, "utf8"),
  seen: string[] = [],
): Problem[] {
  const problems: Problem[] = [];
  for (const block of commentBlocks(file, text)) {
    const comment = block.text.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, (url) => " ".repeat(url.length));
    for (const m of comment.matchAll(FILE_POINTER)) {
      const pointer = m[1] ?? "";
      seen.push(pointer);
      if (resolvePointer(repoRoot, file, pointer) === undefined)
        problems.push({ file, line: block.lineAt(m.index), pointer, why: "no such file in the repository" });
    }
    for (const m of comment.matchAll(SECTION_POINTER)) {
      const pointer = m[1] ?? "";
      const path = resolvePointer(repoRoot, file, pointer);
      if (path === undefined) continue; // reported above
      const cited = (m[2] ?? m[3] ?? "").trim();
      seen.push(`${pointer}, ${cited}`);
      const headings = headingsOf(read(path));
      const whole = headings.has(normalize(cited));
      // "Sources and Facts": two sections, when no heading has the whole name.
      const each = cited.split(/\s+and\s+/).every((part) => headings.has(normalize(part)));
      if (!whole && !each)
        problems.push({
          file,
          line: block.lineAt(m.index),
          pointer: `${pointer}, ${cited}`,
          why: `${relative(repoRoot, path)} has no heading "${cited}"`,
        });
    }
  }
  return problems;
}

/** Every tracked source file whose comments are checked. */
function sourceFiles(): string[] {
  return execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" })
    .split("\0")
    .filter((file) => EXTENSIONS.has(extname(file)))
    .filter((file) => !/(^|\/)(node_modules|dist)\//.test(file))
    .filter((file) => !Object.hasOwn(EXCLUDED, file))
    .filter((file) => existsSync(join(root, file)));
}

describe("pointers in comments", () => {
  it("name only markdown files that exist in the repository, and only sections those files have", () => {
    const seen: string[] = [];
    const problems = sourceFiles().flatMap((file) =>
      checkComments(root, file, readFileSync(join(root, file), "utf8"), undefined, seen),
    );
    expect(problems.map((p) => `${p.file}:${p.line}: (${p.pointer}) — ${p.why}`)).toEqual([]);
    // The scan found the pointers there are (about 250, 100 of them to a section): it cannot pass
    // by reading no comment at all.
    expect(seen.filter((p) => p.startsWith("docs/design/") && !p.includes(",")).length).toBeGreaterThan(150);
    expect(seen.filter((p) => p.includes(",")).length).toBeGreaterThan(60);
  });

  it("every excluded file is still tracked, so the list does not outlive its reasons", () => {
    for (const file of Object.keys(EXCLUDED)) expect(existsSync(join(root, file)), file).toBe(true);
  });
});

describe("the check itself", () => {
  const docs: Record<string, string> = {
    [join(root, "docs/design/api.md")]: "# API\n\n## Conventions\n\n### Errors\n\n```\n# not a heading\n```\n",
  };
  const read = (path: string) => docs[path] ?? readFileSync(path, "utf8");
  const check = (file: string, text: string) =>
    checkComments(root, file, text, read)
      .map((p) => p.pointer)
      .sort();

  it("passes pointers that resolve: a file, a section, a quoted section, two sections joined by 'and', one wrapped", () => {
    const text = [
      "// See docs/design/api.md and (docs/design/api.md, Errors).",
      '/** (docs/design/api.md, "Conventions"): also (docs/design/api.md, Conventions and Errors). */',
      "// The one body (docs/design/api.md,",
      "// Errors), as both sides make it.",
      'const s = "nothing.md"; // a string is not a comment',
    ].join("\n");
    expect(check("workers/example.ts", text)).toEqual([]);
  });

  it("fails a file that does not exist, one outside the repository, and a section that is not a heading", () => {
    const text = [
      "// (api.md, Errors) — the old name, outside the repository",
      "// ../../shared/design/api.md",
      "// (docs/design/api.md, Not a heading)",
      "// (docs/design/api.md, not a heading)",
      "/* (docs/design/api.md, Errors) but (docs/design/nope.md) */",
    ].join("\n");
    expect(check("workers/example.ts", text)).toEqual(
      [
        "api.md",
        "../../shared/design/api.md",
        "docs/design/api.md, Not a heading",
        "docs/design/api.md, not a heading",
        "docs/design/nope.md",
      ].sort(),
    );
  });

  it("reads Solidity, CSS and TOML comments, and leaves URLs alone", () => {
    expect(
      check("contracts/X.sol", '/// (gone.md)\nstring constant S = "a.md"; // (docs/design/api.md, Errors)'),
    ).toEqual(["gone.md"]);
    expect(check("dashboard/x.css", "/* gone.md */ a { background: url(x.md); }")).toEqual(["gone.md"]);
    expect(check("wrangler.toml", '# (gone.md)\nname = "x.md" # not read\n')).toEqual(["gone.md"]);
    expect(check("x.ts", "// https://example.com/docs/README.md")).toEqual([]);
  });
});
