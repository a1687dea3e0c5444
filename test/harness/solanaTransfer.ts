// A SOL transfer as a script would be handed it: a v0 wire transaction, base64, paid by its sender,
// for the suites that check Solana guardrails and budgets (no Solana runtime needed: nothing here
// lands; test/enclave/solana.test.ts sends signed ones to litesvm).
import { getTransferSolInstruction } from "@solana-program/system";
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createNoopSigner,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  pipe,
  setTransactionMessageComputeUnitLimit,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Blockhash,
} from "@solana/kit";

/** Any recent blockhash will do: nothing built here is sent. */
const BLOCKHASH = "EETubP5AKHgjPAhzPAFcb8BAY1hMH639CWCFTqi3hq1k" as Blockhash;

/**
 * `amount` lamports from `from`, who pays the fee, to `to`. `units`, a compute-unit limit, makes
 * each transaction a payload of its own without adding to its fee (no unit price is set).
 */
export function solanaTransfer(from: string, to: string, amount: bigint, units?: number): string {
  const transfer = getTransferSolInstruction({
    source: createNoopSigner(address(from)),
    destination: address(to),
    amount,
  });
  return getBase64EncodedWireTransaction(
    compileTransaction(
      pipe(
        createTransactionMessage({ version: 0 }),
        (m) => setTransactionMessageFeePayer(address(from), m),
        (m) => setTransactionMessageLifetimeUsingBlockhash({ blockhash: BLOCKHASH, lastValidBlockHeight: 1n }, m),
        (m) => (units === undefined ? m : setTransactionMessageComputeUnitLimit(units, m)),
        (m) => appendTransactionMessageInstructions([transfer], m),
      ),
    ),
  );
}
