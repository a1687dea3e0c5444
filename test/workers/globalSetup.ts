// The stack behind the edge's tests in workerd: the same chain and enclave as the enclave suites
// (test/harness/stack.ts). vitest.config.ts hands their URLs to the worker as bindings.
import type { TestProject } from "vitest/node";
import { provideStack } from "../harness/provide.ts";
import { startTestStack } from "../harness/stack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stack = await startTestStack();
  provideStack(project, stack);
  return () => stack.stop();
}
