// The SDK's signing action (toSigilAccount, sendSigilTransaction; sdk/src/account.ts): it signs, or
// sends, what it is asked with the wallet it is named, through Sigil.Actions, inside the enclave. Its
// CID (SIGNER_CID, computed from these exact bytes when the SDK is built) is what a group must grant
// for the wallet (grantSigner). Changing one byte of it changes the CID, and every grant of the old
// one stops applying. Here, not in the SDK, because the edge's MCP tools run it too
// (workers/mcp/server.ts, send_transaction), and the edge does not import the SDK.

/** The action's source. Integers too large for JSON travel as `{"$bigint": "…"}`, which the host revives. */
export const SIGNER_CODE = `// @sigil/sdk signer: signs with params.wallet what params.op asks (toSigilAccount).
async function main({ op, wallet, message, typedData, transaction, hash, id, fees }) {
  switch (op) {
    case "signMessage":
      return await Sigil.Actions.signMessage({ pkpId: wallet, message });
    case "signTypedData":
      return await Sigil.Actions.signTypedData({ pkpId: wallet, typedData });
    case "signTransaction":
      return await Sigil.Actions.signTransaction({ pkpId: wallet, transaction });
    case "sign":
      return (await Sigil.Actions.signDigest({ pkpId: wallet, digest: hash })).signature;
    case "sendTransaction":
      return await Sigil.Actions.sendTransaction({ pkpId: wallet, transaction });
    case "speedUpTransaction":
      return await Sigil.Actions.speedUpTransaction({ pkpId: wallet, id, ...fees });
    case "address":
      return wallet;
    default:
      throw new TypeError("unknown op: " + op);
  }
}
`;
