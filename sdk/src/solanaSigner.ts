// The signing action that toSigilSolanaSigner runs (sdk/src/solana.ts): it signs with the Solana key
// of the wallet it is named, through Sigil.Actions, inside the enclave. An action of its own, beside
// toSigilAccount's (src/signer.ts), so that neither one's CID — what a group grants — changes with the
// other. Its CID (SOLANA_SIGNER_CID, computed from these exact bytes at build time) is what a group
// must grant for the wallet (grantSolanaSigner); changing one byte of it changes the CID.

/** The action's source. */
export const SOLANA_SIGNER_CODE = `// @sigil/sdk Solana signer: signs with params.wallet's Solana key what params.op asks (toSigilSolanaSigner).
async function main({ op, wallet, message, transaction }) {
  switch (op) {
    case "signSolanaMessage":
      return await Sigil.Actions.signSolanaMessage({ pkpId: wallet, message });
    case "signSolanaTransaction":
      return await Sigil.Actions.signSolanaTransaction({ pkpId: wallet, transaction });
    case "address":
      return await Sigil.Actions.getSolanaAddress({ pkpId: wallet });
    default:
      throw new TypeError("unknown op: " + op);
  }
}
`;
