// What a child process of the stack prints: kept whole (for error messages) and handed on line by
// line (to echo it, or to watch for a ready line). Both streams, through node:readline.
import type { ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";

export function captureOutput(child: ChildProcess, onLine: (line: string) => void = () => {}): () => string {
  let output = "";
  for (const stream of [child.stdout, child.stderr]) {
    if (!stream) continue;
    createInterface({ input: stream, crlfDelay: Infinity }).on("line", (line) => {
      output += `${line}\n`;
      onLine(line);
    });
  }
  return () => output;
}
