// For the suites of the `sigil` command: the command run as a user runs it, a process whose exit
// code and output are what the test checks (the stack it talks to: ./localStack.ts).
import { execFile } from "node:child_process";
import { join } from "node:path";

export { startLocalStack, type LocalStack } from "./localStack.ts";

export const root = join(import.meta.dirname, "../..");

export type CliResult = { code: number; stdout: string; stderr: string };

/** Runs `node bin/sigil.ts …` in `cwd` with exactly `env` on top of PATH and HOME; never rejects. */
export function runSigil(
  args: string[],
  options: { env: Record<string, string | undefined>; cwd: string; input?: string },
): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(root, "bin/sigil.ts"), ...args],
      // Only what the test gives: no SIGIL_* of the developer's shell leaks in (Node's compile cache,
      // which npm test sets, is Node's setting, not the command's).
      {
        cwd: options.cwd,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
          ...options.env,
        },
        timeout: 150_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
    else child.stdin?.end();
  });
}

/** The one error line a failed command prints: `sigil <command>: <code>: <message> (request <id>)`. */
/** A note the CLI writes to stderr for a person (never with --json): `run: …`, `allow: …`. */
export const CLI_NOTE = /^(run|allow): /;

export function errorLineOf(result: CliResult): {
  command: string;
  code: string;
  message: string;
  requestId: string | undefined;
} {
  // Notes for the person at the terminal (`run: at most …`, `allow: …`) come before the error line.
  const lines = result.stderr
    .trim()
    .split("\n")
    .filter((line) => !CLI_NOTE.test(line));
  if (lines.length !== 1) throw new Error(`expected one line on stderr, got ${lines.length}:\n${result.stderr}`);
  const m = /^sigil ([a-z -]+?): ([a-z_]+): (.*?)(?: \(request ([0-9a-f-]+)\))?$/.exec(lines[0] as string);
  if (!m) throw new Error(`not an error line: ${lines[0]}`);
  return { command: m[1] as string, code: m[2] as string, message: m[3] as string, requestId: m[4] };
}
