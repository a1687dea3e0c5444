// Every relative link in the repository's markdown resolves: to a file or folder that exists, and a
// `#anchor` to a heading of its target, by GitHub's slug rules. The files are the ones git tracks or
// would (`git ls-files --cached --others --exclude-standard '*.md'`: new documents count before their
// first commit), node_modules excluded. http(s) and other absolute URLs are not fetched. Also: the
// error-code table of docs/reference/errors.md is shared/errors.ts's, code for code.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, normalize, posix } from "node:path";
import { describe, expect, it } from "vitest";
import { errorStatus } from "../../shared/errors.ts";

const root = join(import.meta.dirname, "../..");

/** What the checker needs of a tree: the markdown it checks, and whether any other path exists. */
type Tree = {
  /** Markdown files by repository-relative path (posix), the ones whose links are checked. */
  markdown: Map<string, string>;
  /** Whether a repository-relative path exists (a file or a folder). */
  exists(path: string): boolean;
  /** The text of a markdown file that is not in `markdown` (a link's target), if it exists. */
  read(path: string): string | undefined;
};

type Problem = { file: string; line: number; link: string; problem: string };

/** `text` with fenced code blocks, HTML comments and (with `spans`) inline code spans blanked; newlines kept, so offsets hold. */
function withoutCode(text: string, spans = true): string {
  const blank = (s: string) => s.replace(/[^\n]/g, " ");
  const lines = text.split("\n");
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const open = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && open !== undefined) {
      fence = open;
      lines[i] = blank(line);
    } else if (fence !== undefined) {
      if (new RegExp(`^ {0,3}${fence[0]}{${fence.length},}\\s*$`).test(line)) fence = undefined;
      lines[i] = blank(line);
    }
  }
  const prose = lines.join("\n").replace(/<!--[\s\S]*?-->/g, blank);
  return !spans ? prose : prose.replace(/(`+)(?!`)[\s\S]*?[^`]\1(?!`)/g, blank);
}

/** GitHub's anchor for a heading's text: inline markup dropped, lowercased, punctuation but `-` and `_` removed, spaces to `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/`/g, "")
    .replace(/\*+/g, "")
    .replace(/<[^>]+>/g, "");
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a markdown text offers: its headings' slugs (repeats numbered -1, -2, … as GitHub does) and HTML ids and names. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string) => {
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  };
  // Headings keep their code spans: `## What `npm start` runs` is #what-npm-start-runs.
  const lines = withoutCode(text, false).split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const atx = /^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$/.exec(line);
    if (atx) add(atx[1] ?? "");
    else if (
      i > 0 &&
      /^ {0,3}(=+|-+)\s*$/.test(line) &&
      /\S/.test(lines[i - 1] as string) &&
      !/^\s*[|>-]/.test(lines[i - 1] as string)
    )
      add(lines[i - 1] as string);
  }
  for (const m of text.matchAll(/<[a-z][^>]*\s(?:id|name)=["']([^"']+)["']/gi)) anchors.add(m[1] as string);
  return anchors;
}

/** Every link target in a markdown text, with its line: inline links and images, and reference definitions. */
function linksOf(text: string): Array<{ target: string; line: number }> {
  const clean = withoutCode(text);
  const lineAt = (offset: number) => clean.slice(0, offset).split("\n").length;
  const found: Array<{ target: string; line: number }> = [];
  // `](target)` or `](<target>)`, an optional title after; balanced parentheses inside a bare target.
  for (const m of clean.matchAll(
    /\]\(\s*(<[^>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g,
  )) {
    const raw = m[1] as string;
    found.push({ target: raw.startsWith("<") ? raw.slice(1, -1) : raw, line: lineAt(m.index) });
  }
  for (const m of clean.matchAll(/^ {0,3}\[[^\]\n]+\]:\s*(<[^>\n]*>|\S+)/gm)) {
    const raw = m[1] as string;
    found.push({ target: raw.startsWith("<") ? raw.slice(1, -1) : raw, line: lineAt(m.index) });
  }
  return found;
}

/** The links of `tree`'s markdown that do not resolve. */
function brokenLinks(tree: Tree): Problem[] {
  const problems: Problem[] = [];
  const anchorCache = new Map<string, Set<string> | undefined>();
  const anchorsAt = (path: string) => {
    if (!anchorCache.has(path)) {
      const text = tree.markdown.get(path) ?? tree.read(path);
      anchorCache.set(path, text === undefined ? undefined : anchorsOf(text));
    }
    return anchorCache.get(path);
  };
  for (const [file, text] of tree.markdown) {
    for (const { target, line } of linksOf(text)) {
      if (target === "" || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("//")) continue; // absolute: not fetched
      const hash = target.indexOf("#");
      const pathPart = hash < 0 ? target : target.slice(0, hash);
      const anchor = hash < 0 ? undefined : target.slice(hash + 1);
      let decoded: string;
      try {
        decoded = decodeURIComponent(pathPart.split("?")[0] as string);
      } catch {
        problems.push({ file, line, link: target, problem: "is not a valid URL path" });
        continue;
      }
      const resolved =
        decoded === ""
          ? file
          : posix.normalize(decoded.startsWith("/") ? decoded.slice(1) : posix.join(posix.dirname(file), decoded));
      if (resolved.startsWith("../") || resolved === "..") {
        problems.push({ file, line, link: target, problem: "points outside the repository" });
        continue;
      }
      const path = resolved.replace(/\/$/, "") || ".";
      if (decoded !== "" && !tree.markdown.has(path) && !tree.exists(path)) {
        problems.push({ file, line, link: target, problem: `names ${path}, which does not exist` });
        continue;
      }
      if (anchor === undefined || anchor === "") continue;
      if (!/\.(md|markdown)$/i.test(path)) continue; // anchors into other files (code lines, …) are not checked
      const anchors = anchorsAt(path);
      if (anchors === undefined)
        problems.push({ file, line, link: target, problem: `names ${path}, which cannot be read` });
      else if (!anchors.has(decodeURIComponent(anchor).toLowerCase()))
        problems.push({ file, line, link: target, problem: `names #${anchor}, which is no heading of ${path}` });
    }
  }
  return problems;
}

/** The repository's markdown, as git lists it (tracked, and new files not ignored), node_modules excluded. */
function repositoryTree(): Tree {
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md"], {
    cwd: root,
    encoding: "utf8",
  })
    .split("\0")
    .filter((p) => p !== "" && !p.split("/").includes("node_modules"));
  const markdown = new Map<string, string>();
  for (const path of new Set(listed)) {
    const full = join(root, path);
    if (existsSync(full) && statSync(full).isFile()) markdown.set(path, readFileSync(full, "utf8"));
  }
  return {
    markdown,
    exists: (path) => existsSync(join(root, normalize(path))),
    read: (path) => {
      const full = join(root, normalize(path));
      return existsSync(full) && statSync(full).isFile() ? readFileSync(full, "utf8") : undefined;
    },
  };
}

/** A tree made of the given files only. */
function treeOf(files: Record<string, string>): Tree {
  const markdown = new Map(Object.entries(files).filter(([p]) => p.endsWith(".md")));
  const paths = new Set(Object.keys(files));
  const folders = new Set(
    [...paths].flatMap((p) =>
      p
        .split("/")
        .slice(0, -1)
        .map((_, i, parts) => parts.slice(0, i + 1).join("/")),
    ),
  );
  return {
    markdown,
    exists: (path) => paths.has(path) || folders.has(path),
    read: (path) => files[path],
  };
}

describe("the repository's markdown links", () => {
  it("every relative link resolves to a file or folder that exists, and every #anchor to a heading of its target", () => {
    const tree = repositoryTree();
    expect(tree.markdown.has("README.md")).toBe(true);
    const problems = brokenLinks(tree).map((p) => `${p.file}:${p.line}: (${p.link}) ${p.problem}`);
    expect(problems).toEqual([]);
  });
});

describe("the link checker", () => {
  it("finds a link to a missing file, a missing anchor, a missing anchor in the same file, and a path out of the repository", () => {
    const tree = treeOf({
      "README.md": [
        "# Title",
        "",
        "See [the guide](docs/guide.md), [its setup](docs/guide.md#setup), [a typo](docs/gide.md),",
        "[no such part](docs/guide.md#teardown), [here](#title), [nowhere](#nowhere) and [outside](../x.md).",
      ].join("\n"),
      "docs/guide.md": "# Guide\n\n## Setup\n\nBack to [the README](../README.md#title).\n",
    });
    expect(brokenLinks(tree)).toEqual([
      { file: "README.md", line: 3, link: "docs/gide.md", problem: "names docs/gide.md, which does not exist" },
      {
        file: "README.md",
        line: 4,
        link: "docs/guide.md#teardown",
        problem: "names #teardown, which is no heading of docs/guide.md",
      },
      { file: "README.md", line: 4, link: "#nowhere", problem: "names #nowhere, which is no heading of README.md" },
      { file: "README.md", line: 4, link: "../x.md", problem: "points outside the repository" },
    ]);
  });

  it("accepts folders, files that are not markdown, titles, angle brackets, reference definitions and root-relative paths", () => {
    const tree = treeOf({
      "README.md": [
        '[folder](docs/) [code](src/a.ts#L3) [titled](docs/a.md "A") [spaced](<docs/a b.md>) [enc](docs/a%20b.md)',
        "[root](/docs/a.md#a-heading) [ref][r]",
        "",
        "[r]: docs/a.md#a-heading",
      ].join("\n"),
      "docs/a.md": "## A heading\n",
      "docs/a b.md": "text\n",
      "src/a.ts": "export {};\n",
    });
    expect(brokenLinks(tree)).toEqual([]);
  });

  it("does not fetch or check absolute URLs, nor look inside code", () => {
    const tree = treeOf({
      "README.md": [
        "[site](https://example.org/missing) [mail](mailto:a@example.org) [proto](//example.org/x)",
        "`[not a link](missing.md)`",
        "```md",
        "[in a fence](missing.md)",
        "```",
        "<!-- [in a comment](missing.md) -->",
      ].join("\n"),
    });
    expect(brokenLinks(tree)).toEqual([]);
  });

  it("finds a reference definition that names a missing file", () => {
    const tree = treeOf({ "README.md": "[x][r]\n\n[r]: docs/missing.md\n" });
    expect(brokenLinks(tree).map((p) => p.problem)).toEqual(["names docs/missing.md, which does not exist"]);
  });

  it("makes anchors by GitHub's rules: lowercase, spaces to -, punctuation but - and _ dropped, repeats numbered", () => {
    expect(slug("What `npm start` runs")).toBe("what-npm-start-runs");
    expect(slug("Script limits, and how they hold")).toBe("script-limits-and-how-they-hold");
    expect(slug("Wallet-owned (ChainSecured) accounts")).toBe("wallet-owned-chainsecured-accounts");
    expect(slug("`Sigil.Actions`")).toBe("sigilactions");
    expect(slug("setTimeout, clearTimeout, queueMicrotask")).toBe("settimeout-cleartimeout-queuemicrotask");
    expect(slug("The [CLI](cli.md) and snake_case")).toBe("the-cli-and-snake_case");
    expect(slug("Capacity on paper: 10 000 runs/s")).toBe("capacity-on-paper-10-000-runss");
    expect([...anchorsOf("# A\n\n## Notes\n\n## Notes\n\nSetext\n------\n\n```\n# not a heading\n```\n")]).toEqual([
      "a",
      "notes",
      "notes-1",
      "setext",
    ]);
  });
});

describe("docs/reference/errors.md", () => {
  it("lists every error code of shared/errors.ts with its status, and no other", () => {
    const text = readFileSync(join(root, "docs/reference/errors.md"), "utf8");
    const table = text.slice(text.indexOf("<!-- error-codes"), text.indexOf("<!-- error-codes:end -->"));
    const rows = Object.fromEntries(
      [...table.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map((m) => [m[1] as string, Number(m[2])]),
    );
    expect(rows, "docs/reference/errors.md's table of codes is not shared/errors.ts's errorStatus").toEqual({
      ...errorStatus,
    });
  });
});
