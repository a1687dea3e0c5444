// The dashboard's browser tests: Debian's Chromium driven by playwright-core, a page that records
// every console error and uncaught exception, screenshots at a desktop and a phone width into
// .sigil/screenshots/, and axe-core's accessibility check run inside the page.
import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { CHROMIUM } from "../../bin/chromium.ts";

const root = join(import.meta.dirname, "../..");
export const screenshotDir = join(root, ".sigil/screenshots");

export async function launchBrowser(): Promise<Browser> {
  // --no-sandbox: the tests may run as root, where Chromium's sandbox will not start.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

export type WatchedPage = { page: Page; problems: string[] };

/**
 * A page whose console errors and uncaught exceptions are collected in `problems`. The browser's own
 * "Failed to load resource" line for an answered 4xx/5xx is left out: it reports the HTTP status
 * the page asked for (a wrong key's 401), not a fault of the page, and no script can silence it.
 */
export async function watchedPage(browser: Browser, width = 1280): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource: the server responded with a status of"))
      problems.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
  return { page, problems };
}

/** Screenshots of the page as it is now, at 1280 and 360 px wide: .sigil/screenshots/<name>-<width>.png. */
export async function screenshots(page: Page, name: string): Promise<string[]> {
  mkdirSync(screenshotDir, { recursive: true });
  const files: string[] = [];
  const before = page.viewportSize() ?? { width: 1280, height: 900 };
  for (const width of [1280, 360]) {
    await page.setViewportSize({ width, height: 900 });
    const file = join(screenshotDir, `${name}-${width}.png`);
    await page.screenshot({ path: file, fullPage: true });
    files.push(file);
  }
  await page.setViewportSize(before);
  return files;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** axe-core's violations of impact serious or critical on the page as it is now (each "id: help (n nodes)"). */
export async function seriousViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected
  // <script> would be refused by it, as it should be).
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const result = await (
      globalThis as unknown as {
        axe: {
          run(): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: unknown[] }> }>;
        };
      }
    ).axe.run();
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }));
  });
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.help} (${v.nodes} nodes)`);
}
