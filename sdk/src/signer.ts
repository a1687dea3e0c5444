// The signing action that toSigilAccount runs (sdk/src/account.ts): its source lives in
// shared/signerAction.ts, where the edge's MCP tools find it too; its CID is SIGNER_CID.
export { SIGNER_CODE } from "../../shared/signerAction.ts";
