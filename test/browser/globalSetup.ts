// The browser suite's one setup: a Chromium to drive (Debian's package, installed when missing), and
// the local stack its files share (test/harness/localStack.ts), each file with accounts of its own.
import type { TestProject } from "vitest/node";
import { ensureChromium } from "../../bin/chromium.ts";
import { startSharedLocalStack } from "../harness/localStack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  ensureChromium();
  const { shared, stop } = await startSharedLocalStack();
  project.provide("localStack", shared);
  return stop;
}
