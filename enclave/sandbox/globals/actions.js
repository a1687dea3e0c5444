// `Sigil.Actions` (docs/design/sandbox.md), built at the script's first use of `Sigil` (or ahead of it, when the
// host prepares a runtime while idle), deeply frozen; core.js makes `Sigil` of it and the run's request.
// Each function copies the fields it takes into a fresh record (so a script's prototype tampering
// cannot change what is sent) and asks the host, which validates them (a TypeError with a clear
// message, before any key is touched), authorizes the wallet for this run's key and code, derives
// the key and signs natively. Kept small on purpose: this file is parsed in every run that uses Sigil.
(function installActions(G, P, need, kit) {
  "use strict";
  const { apply, freeze, isView, objectKeys } = P;
  const { asyncCall, syncCall, record } = kit;
  const pick = (name, args, fields) => {
    if (args === null || typeof args !== "object") throw new P.TypeError(`${name} expects an object argument`);
    const out = record({});
    for (let i = 0; i < fields.length; i++) out[fields[i]] = args[fields[i]];
    return out;
  };
  // The computed key gives each function its name (Sigil.Actions.signMessage.name === "signMessage").
  const walletOp = (name, fields) => ({ [name]: (args) => asyncCall(name, pick(name, args, fields)) })[name];
  const actionOp = (name, fields) =>
    ({
      [name]: (args) => asyncCall(name, args === undefined || args === null ? record({}) : pick(name, args, fields)),
    })[name];
  // keccak256 / sha256 also take bytes, which cannot cross as JSON: they travel as hex.
  const digestOp = (name) =>
    ({
      [name]: (value) => {
        if (isView(value) || value instanceof P.ArrayBuffer) {
          const bytes =
            value instanceof P.ArrayBuffer
              ? new P.Uint8Array(value)
              : new P.Uint8Array(value.buffer, value.byteOffset, value.byteLength);
          let hex = "0x";
          for (let i = 0; i < bytes.length; i++)
            hex += (bytes[i] < 16 ? "0" : "") + apply(P.numToString, bytes[i], [16]);
          return syncCall(name, record({ value: hex, bytes: true }));
        }
        return syncCall(name, record({ value }));
      },
    })[name];
  const Actions = {
    signMessage: walletOp("signMessage", ["pkpId", "message"]),
    signTypedData: walletOp("signTypedData", ["pkpId", "typedData"]),
    signTransaction: walletOp("signTransaction", ["pkpId", "transaction"]),
    sendTransaction: walletOp("sendTransaction", ["pkpId", "transaction"]),
    speedUpTransaction: walletOp("speedUpTransaction", [
      "pkpId",
      "id",
      "maxFeePerGas",
      "maxPriorityFeePerGas",
      "gasPrice",
    ]),
    signDigest: walletOp("signDigest", ["pkpId", "digest"]),
    getPublicKey: walletOp("getPublicKey", ["pkpId"]),
    getPrivateKey: walletOp("getPrivateKey", ["pkpId"]),
    getSolanaAddress: walletOp("getSolanaAddress", ["pkpId"]),
    signSolanaMessage: walletOp("signSolanaMessage", ["pkpId", "message"]),
    signSolanaTransaction: walletOp("signSolanaTransaction", ["pkpId", "transaction"]),
    encrypt: walletOp("encrypt", ["pkpId", "plaintext"]),
    decrypt: walletOp("decrypt", ["pkpId", "ciphertext", "raw"]),
    getActionWalletAddress: actionOp("getActionWalletAddress", ["cid"]),
    getActionPublicKey: actionOp("getActionPublicKey", ["cid"]),
    signMessageAsAction(args) {
      return asyncCall("signMessageAsAction", pick("signMessageAsAction", args, ["message"]));
    },
    getActionPrivateKey() {
      return asyncCall("getActionPrivateKey", record({}));
    },
    setResponse(value) {
      kit.setResponse(value);
    },
    keccak256: digestOp("keccak256"),
    sha256: digestOp("sha256"),
  };
  for (const name of objectKeys(Actions)) freeze(Actions[name]);
  return { Actions: freeze(Actions) };
});
