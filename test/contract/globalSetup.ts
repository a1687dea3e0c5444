// Starts one anvil for the contract suite and hands its RPC URL to the test files.
import type { TestProject } from "vitest/node";
import { startAnvil } from "../../bin/stack/anvil.ts";

declare module "vitest" {
  export interface ProvidedContext {
    rpcUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const anvil = await startAnvil({ accounts: 20 });
  project.provide("rpcUrl", anvil.rpcUrl);
  return () => anvil.stop();
}
