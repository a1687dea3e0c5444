// One vitest run, one project per suite. Every run also writes a JSON report that .ci/run reads to
// print its `N passed, N failed` line.
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { TEST_EDGE_IDENTITY_SEED } from "./test/enclave/constants.ts";

/** A project of edge suites in workerd against their own anvil + enclave (test/workers/globalSetup.ts). */
function edgeOnStack(
  name: string,
  files: { include: string[]; exclude?: string[] },
  options: { globalSetup: string; bindings: (inject: Inject) => Record<string, string> },
) {
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            SIGIL_ENV: "test",
            SIGIL_RPC_URL: inject("rpcUrl"),
            SIGIL_CONTRACT_ADDRESS: inject("contract"),
            SIGIL_ENCLAVE_URLS: inject("enclaveUrl"),
            // The edge's channel identity, which the test enclave allows; its quotes are simulated.
            SIGIL_EDGE_IDENTITY_KEY: TEST_EDGE_IDENTITY_SEED,
            SIGIL_ATTESTATION_ALLOW_SIMULATED: "true",
            // The suites make many requests from one address; rate limits have their own tests.
            SIGIL_RATE_LIMIT_PER_KEY: "1000000",
            SIGIL_RATE_LIMIT_PER_IP: "1000000",
            SIGIL_RATE_LIMIT_OPEN_PER_IP: "1000000",
            SIGIL_OPEN_WRITES_PER_HOUR: "1000000",
            // The ledger's crowd test sends 200 runs of one account at once, past one isolate's
            // admission (workers/middleware/admission, tested on its own): no limit here.
            SIGIL_EDGE_MAX_IN_FLIGHT: "0",
            // What the enclave calls back (budgets, settlements of runs' charges): this edge has no
            // address outside workerd here, and its origin (http://edge) names no host. A loopback
            // port nobody listens on refuses at once, without a DNS lookup.
            SIGIL_BUDGET_URL: "http://127.0.0.1:9",
            ...options.bindings(inject),
          },
        },
      })),
    ],
    test: {
      name,
      ...files,
      globalSetup: [options.globalSetup],
      fileParallelism: false,
      // The files run one after another in one workerd, its modules loaded once: each makes its own
      // accounts on the stack, and what they share (the edge's modules, its Durable Objects) is the
      // edge's as in production. One workerd per file cost 40 % more CPU (transform and import).
      isolate: false,
      testTimeout: 60_000,
      hookTimeout: 120_000,
    },
  };
}

/** End-to-end files whose subject is the stack's own life: start and Ctrl-C, restarts, retries after a kill. */
const E2E_LIFECYCLE = [
  "test/e2e/start.test.ts",
  "test/e2e/enclaveRestart.test.ts",
  "test/e2e/retries.test.ts",
  "test/e2e/webhooks.test.ts",
  "test/e2e/budgetCrash.test.ts",
  "test/e2e/transactionsFollowed.test.ts",
  "test/e2e/anchoredBurst.test.ts",
];

type Inject = <
  K extends "stripeApiBase" | "stripeSecretKey" | "stripePublishableKey" | "stripeWebhookSecret" | "edgeRpcUrl",
>(
  key: K,
) => string;

export default defineConfig({
  test: {
    reporters: ["default", "json"],
    outputFile: { json: ".sigil/test-results.json" },
    projects: [
      {
        test: {
          name: "unit",
          // Vitest's 5 s default guards against a hang, not a speed: the heaviest unit files (200
          // ECDSA signatures, a worker recursing to QuickJS's limit, a CLI spawned) took 5.0–5.8 s
          // beside the other groups on CI's two cores and failed on it. Speed is the benches' to say.
          testTimeout: 30_000,
          include: [
            "shared/**/*.test.ts",
            "sdk/**/*.test.ts",
            "contracts/**/*.test.ts",
            "bin/**/*.test.ts",
            "enclave/**/*.test.ts",
            "emulators/**/*.test.ts",
            "deploy/**/*.test.ts",
            "test/unit/**/*.test.ts",
          ],
        },
      },
      {
        test: {
          name: "contract",
          include: ["test/contract/**/*.test.ts"],
          // One anvil for the whole run; files take turns so time travel and gas stay deterministic.
          globalSetup: ["test/contract/globalSetup.ts"],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The edge, inside workerd (Miniflare) with the bindings of wrangler.toml and no backend;
        // small rate limits so their tests reach them.
        plugins: [
          cloudflareTest({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                SIGIL_RATE_LIMIT_PER_KEY: "20",
                SIGIL_RATE_LIMIT_PER_IP: "50",
                SIGIL_RATE_LIMIT_OPEN_PER_IP: "5",
                SIGIL_OPEN_WRITES_PER_HOUR: "30",
              },
            },
          }),
        ],
        test: {
          name: "workers",
          include: ["workers/**/*.test.ts"],
        },
      },
      // The edge in workerd against a real chain and enclave (test/workers/globalSetup.ts); metering
      // has its own project, with billing on (the default), so the other suites need no credit.
      edgeOnStack(
        "workers-stack",
        { include: ["test/workers/**/*.test.ts"], exclude: ["test/workers/billing/**"] },
        // The audit log reads a few blocks per eth_getLogs here, so its pages walk several windows.
        {
          globalSetup: "test/workers/globalSetup.ts",
          bindings: () => ({ SIGIL_BILLING: "off", SIGIL_AUDIT_WINDOW_BLOCKS: "5" }),
        },
      ),
      // With a local Stripe too (test/workers/billing/globalSetup.ts), and the chain through a proxy
      // the key cache's suite stops; its poll interval small, so that its bound is quick to check.
      edgeOnStack(
        "workers-billing",
        { include: ["test/workers/billing/**/*.test.ts"] },
        {
          globalSetup: "test/workers/billing/globalSetup.ts",
          bindings: (inject) => ({
            SIGIL_RPC_URL: inject("edgeRpcUrl"),
            SIGIL_EDGE_KEY_POLL_MS: "250",
            STRIPE_API_BASE: inject("stripeApiBase"),
            STRIPE_SECRET_KEY: inject("stripeSecretKey"),
            STRIPE_PUBLISHABLE_KEY: inject("stripePublishableKey"),
            STRIPE_WEBHOOK_SECRET: inject("stripeWebhookSecret"),
          }),
        },
      ),
      {
        test: {
          name: "enclave",
          include: ["test/enclave/**/*.test.ts"],
          exclude: ["test/enclave/leak.test.ts"],
          // One enclave process (with anvil and the emulators) for the whole suite.
          globalSetup: ["test/enclave/globalSetup.ts"],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          exclude: ["test/e2e/soak.test.ts", ...E2E_LIFECYCLE],
          // One local stack for the files that need only a stack (test/harness/localStack.ts); they
          // take turns on it, each with accounts of its own.
          globalSetup: ["test/e2e/globalSetup.ts"],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: "e2e-lifecycle",
          // Files whose subject is the stack's own life start the stacks they need.
          include: E2E_LIFECYCLE,
          fileParallelism: false,
          testTimeout: 120_000,
        },
      },
      {
        test: {
          name: "long",
          // The long runs, each on a stack of its own, in a lane beside the others (test/run.ts): the
          // soak's 75-second variant, which loads the machine by design, then the 10 000-run leak test.
          include: ["test/e2e/soak.test.ts", "test/enclave/leak.test.ts"],
          fileParallelism: false,
          testTimeout: 600_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          // Debian's chromium, installed by the project when missing (bin/chromium.ts); the dashboard
          // against the local stack, one file at a time.
          globalSetup: ["test/browser/globalSetup.ts"],
          fileParallelism: false,
          testTimeout: 120_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
});
