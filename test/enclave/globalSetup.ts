// One stack for the enclave suites (test/harness/stack.ts); test files reach it over HTTP, as the
// edge will.
import type { TestProject } from "vitest/node";
import { startTestStack } from "../harness/stack.ts";

declare module "vitest" {
  export interface ProvidedContext {
    rpcUrl: string;
    contract: `0x${string}`;
    owner: `0x${string}`;
    enclaveUrl: string;
    enclavePid: number;
    gatewayUrl: string;
    fetchTargetUrl: string;
    listenerPollMs: number;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stack = await startTestStack({ echoEnclaveLogs: Boolean(process.env.SIGIL_TEST_ENCLAVE_LOGS) });
  for (const key of ["rpcUrl", "contract", "owner", "enclaveUrl", "enclavePid", "gatewayUrl", "fetchTargetUrl", "listenerPollMs"] as const) {
    project.provide(key, stack[key] as never);
  }
  return () => stack.stop();
}
