// One stack for the enclave suites (test/harness/stack.ts); test files reach it over HTTP, as the
// edge will.
import type { TestProject } from "vitest/node";
import { provideStack } from "../harness/provide.ts";
import { startTestStack } from "../harness/stack.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stack = await startTestStack({ echoEnclaveLogs: Boolean(process.env.SIGIL_TEST_ENCLAVE_LOGS) });
  provideStack(project, stack);
  return () => stack.stop();
}
