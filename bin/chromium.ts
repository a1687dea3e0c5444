// The browser the dashboard's tests drive: Debian's `chromium` package (/usr/bin/chromium), which
// the project installs itself when it is missing — `apt-get install chromium` from Debian's
// packages, the one place besides the npm registry this project fetches from — so a fresh machine
// needs nothing the README does not say. Run it alone (`node bin/chromium.ts`) to install ahead.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

export const CHROMIUM = process.env.SIGIL_CHROMIUM ?? "/usr/bin/chromium";

function apt(args: string[]): void {
  execFileSync("apt-get", args, {
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

/** The path of a Chromium to run, installing Debian's package first when there is none. */
export function ensureChromium(log: (line: string) => void = (l) => console.log(l)): string {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  if (typeof process.getuid !== "function" || process.getuid() !== 0) {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install Debian's package (sudo apt-get install chromium), or set SIGIL_CHROMIUM to one`,
    );
  }
  log("chromium: installing Debian's chromium package for the browser tests (apt-get install chromium)");
  try {
    apt(["install", "-y", "--no-install-recommends", "chromium"]);
  } catch {
    // Package lists not fetched yet on a fresh machine: fetch them, then try once more.
    apt(["update"]);
    apt(["install", "-y", "--no-install-recommends", "chromium"]);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is not there`);
  log(`chromium: installed at ${CHROMIUM}`);
  return CHROMIUM;
}

if (import.meta.main) console.log(ensureChromium());
