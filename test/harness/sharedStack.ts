// One test stack (stack.ts: anvil with AccountConfig, the emulators, the enclave) for the suites that
// run against the service's real parts — the enclave suites and the edge's in workerd, billing on and
// off — when they run in one vitest process: the first of their globalSetups starts it, the last to
// end stops it. Billing is the edge's binding, not the backend's, and each suite makes its own
// accounts, so they need nothing of their own from it. Kept on globalThis: each project's
// globalSetup is loaded apart, in the same process.
import { startTestStack, type TestStack } from "./stack.ts";

const KEY = Symbol.for("sigil.sharedTestStack");
type Shared = { stack: Promise<TestStack>; users: number };
const registry = globalThis as unknown as { [KEY]?: Shared };

/** The shared stack, started if none is running; `release()` when the suite is done with it. */
export async function acquireTestStack(): Promise<{ stack: TestStack; release(): Promise<void> }> {
  let shared = registry[KEY];
  if (!shared) {
    shared = { stack: startTestStack({ echoEnclaveLogs: Boolean(process.env.SIGIL_TEST_ENCLAVE_LOGS) }), users: 0 };
    registry[KEY] = shared;
    // A stack that failed to start is not kept: the next suite tries again.
    shared.stack.catch(() => {
      if (registry[KEY] === shared) delete registry[KEY];
    });
  }
  shared.users++;
  const stack = await shared.stack;
  let released = false;
  return {
    stack,
    release: async () => {
      if (released) return;
      released = true;
      const current = shared as Shared;
      if (--current.users > 0) return;
      if (registry[KEY] === current) delete registry[KEY];
      await stack.stop();
    },
  };
}
