// toSigilAccount without a service: what it sends the signing action (bytes as hex, big integers
// tagged for the host to revive), what a failed run becomes, and a chain serialization it cannot
// sign refused before any run.
import { serializeTransaction, type Hex, type TransactionSerializable } from "viem";
import { describe, expect, it } from "vitest";
import { toSigilAccount } from "./account.ts";
import { SigilError } from "./errors.ts";
import type { SigilClient } from "./client.ts";

const WALLET = "0x1111111111111111111111111111111111111111";

/** A client whose sigilAction records its input and answers `answer`. */
function stubClient(answer: Record<string, unknown>) {
  const runs: Array<{ js_params: Record<string, unknown> }> = [];
  const client = {
    sigilAction: async (
      input: { js_params: Record<string, unknown> },
      options?: { onResponse?: (r: unknown) => void },
    ) => {
      runs.push(input);
      options?.onResponse?.({ status: 200, requestId: "req-run", headers: new Headers() });
      return { logs: "", cid: "Qm", duration_ms: 1, charged_cents: 1, ...answer };
    },
  } as unknown as SigilClient;
  return { client, runs };
}

describe("toSigilAccount", () => {
  it("sends bytes as 0x hex and bigints as {$bigint} tags, and answers the run's response", async () => {
    const { client, runs } = stubClient({ has_error: false, response: "0xsig" });
    const account = toSigilAccount({ client, wallet: WALLET });
    expect(await account.signMessage({ message: { raw: new Uint8Array([0xde, 0xad]) } })).toBe("0xsig");
    await account.signTypedData({
      domain: {},
      types: { M: [{ name: "v", type: "uint256" }] },
      primaryType: "M",
      message: { v: 2n ** 100n },
    });
    expect(runs[0]!.js_params).toEqual({ op: "signMessage", wallet: WALLET, message: { raw: "0xdead" } });
    expect((runs[1]!.js_params.typedData as { message: unknown }).message).toEqual({
      v: { $bigint: (2n ** 100n).toString() },
    });
  });

  it("a failed run is a SigilError with the run's code, its logs and the request id", async () => {
    const { client } = stubClient({
      has_error: true,
      logs: "boom",
      error: { code: "permission_denied", message: "not yours" },
    });
    const err = await toSigilAccount({ client, wallet: WALLET })
      .signMessage({ message: "x" })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SigilError);
    expect(err).toMatchObject({ code: "permission_denied", requestId: "req-run", details: { logs: "boom" } });
  });

  it("refuses a transaction its chain serializes otherwise, without running anything", async () => {
    const { client, runs } = stubClient({ has_error: false, response: "0x" });
    const tx: TransactionSerializable = {
      chainId: 1,
      to: WALLET,
      value: 1n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      nonce: 0,
      gas: 21000n,
    };
    // viem's generic signature, taken at one transaction type.
    const signTransaction = toSigilAccount({ client, wallet: WALLET }).signTransaction as (
      t: TransactionSerializable,
      o: { serializer: (t: TransactionSerializable) => Hex },
    ) => Promise<Hex>;
    await expect(signTransaction(tx, { serializer: () => "0x7e00" })).rejects.toThrow(/its own way/);
    expect(runs).toHaveLength(0);
    // A chain serializer that agrees with Ethereum's for this transaction is fine.
    await signTransaction(tx, { serializer: (t) => serializeTransaction(t) });
    expect(runs).toHaveLength(1);
  });
});
