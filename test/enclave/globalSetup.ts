// The stack of the enclave suites (test/harness/stack.ts), shared with the edge's suites that run
// in the same vitest process (test/harness/sharedStack.ts); test files reach it over HTTP, as the edge will.
import type { TestProject } from "vitest/node";
import { provideStack } from "../harness/provide.ts";
import { acquireTestStack } from "../harness/sharedStack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { stack, release } = await acquireTestStack();
  provideStack(project, stack);
  return release;
}
