// The command's version: built into the packed CLI (bin/package/build.ts defines SIGIL_CLI_VERSION);
// run from the repository, its package.json's.
import { readFileSync } from "node:fs";

declare const SIGIL_CLI_VERSION: string | undefined;

export function cliVersion(): string {
  return typeof SIGIL_CLI_VERSION === "string"
    ? SIGIL_CLI_VERSION
    : (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}
