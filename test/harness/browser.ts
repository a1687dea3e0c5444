// The dashboard's browser tests: Debian's Chromium driven by playwright-core, a page that records
// every console error and uncaught exception, screenshots at a desktop and a phone width into
// .sigil/screenshots/, what overflows sideways at a phone's width, and axe-core's accessibility
// check run inside the page.
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

/**
 * What does not fit at `width` px (360: a small phone): the page wider than the window, and each
 * button, link or control whose own content is clipped (wider than its box, the "Remo" of a
 * squeezed Remove), a button another element covers, or anything that reaches past the window's
 * right edge. Each problem in words; none is [].
 * The viewport is left at `width`.
 */
export async function horizontalOverflow(page: Page, width = 360): Promise<string[]> {
  await page.setViewportSize({ width, height: 900 });
  // Two frames: the layout after the resize.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  return page.evaluate((w) => {
    const problems: string[] = [];
    const doc = document.documentElement;
    const name = (el: Element) =>
      `${el.tagName.toLowerCase()}${el.className && typeof el.className === "string" ? `.${el.className.split(" ")[0]}` : ""} "${(el.getAttribute("aria-label") ?? el.textContent ?? "").trim().slice(0, 40)}"`;
    if (doc.scrollWidth > w) {
      // What makes it so: the innermost elements past the right edge.
      const clipped = (el: Element) => {
        for (let up = el.parentElement; up; up = up.parentElement)
          if (getComputedStyle(up).overflowX !== "visible") return true;
        return false;
      };
      const past = [...document.body.querySelectorAll("*")].filter(
        (el) => el.getBoundingClientRect().right > w + 0.5 && !clipped(el),
      );
      const innermost = past.filter((el) => !past.some((other) => other !== el && el.contains(other)));
      problems.push(`the page is ${doc.scrollWidth} px wide: ${innermost.slice(0, 3).map(name).join(", ")}`);
    }
    for (const el of document.querySelectorAll("button, a, input, select, textarea, .hex, code")) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) continue;
      // Inside something that scrolls on purpose (the code editor, a log), reaching past is fine.
      let scroller: Element | null = el.parentElement;
      while (scroller && !["auto", "scroll"].includes(getComputedStyle(scroller).overflowX))
        scroller = scroller.parentElement;
      if (!scroller && box.right > w + 0.5) problems.push(`${name(el)} reaches ${Math.round(box.right)} px`);
      if (el.tagName === "BUTTON" && el.scrollWidth > el.clientWidth + 1)
        problems.push(`${name(el)} is clipped: ${el.scrollWidth} px of text in ${el.clientWidth} px`);
      // A button another element covers (its ends under a neighbour) is clipped as surely.
      if (el.tagName === "BUTTON") {
        el.scrollIntoView({ block: "center" });
        const at = el.getBoundingClientRect();
        for (const x of [at.left + 2, at.right - 2]) {
          const top = document.elementFromPoint(x, at.top + at.height / 2);
          if (top && top !== el && !el.contains(top)) problems.push(`${name(el)} is covered by ${name(top)}`);
        }
      }
    }
    window.scrollTo(0, 0);
    return problems;
  }, width);
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
