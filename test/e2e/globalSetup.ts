// The end-to-end suites that need only a local stack share one (test/harness/localStack.ts), started
// here once for the project; each file makes its own accounts on it.
import type { TestProject } from "vitest/node";
import { startSharedLocalStack } from "../harness/localStack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { shared, stop } = await startSharedLocalStack();
  project.provide("localStack", shared);
  return stop;
}
