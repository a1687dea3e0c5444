// `Sigil` (sandbox.md, Sigil.Actions): every wallet and action-identity operation, validated here
// (a TypeError with a clear message) before the host is asked. The host authorizes each wallet for
// this run's key and code, derives the key, and signs natively. Built at the script's first use of
// `Sigil`, deeply frozen.
(function installActions(G, P, need, kit) {
  "use strict";
  const { apply, freeze, isArray, String: StringCtor, reTest, isView } = P;
  const { Uint8Array: Uint8ArrayCtor, ArrayBuffer: ArrayBufferCtor, TypeError: TypeErrorCtor } = P;
  const { asyncCall, syncCall, record, ownRegExp } = kit;
  const test = (re, s) => apply(reTest, re, [s]);
  const HEX_ADDRESS = ownRegExp(/^0x[0-9a-fA-F]{40}$/);
  const HEX = ownRegExp(/^0x([0-9a-fA-F]{2})*$/);
  const HEX32 = ownRegExp(/^0x[0-9a-fA-F]{64}$/);

  function requireObject(value, fn) {
    if (value === null || typeof value !== "object") throw new TypeErrorCtor(`${fn} expects an object argument`);
    return value;
  }

  function requirePkpId(args, fn) {
    const pkpId = requireObject(args, fn).pkpId;
    if (typeof pkpId !== "string" || !test(HEX_ADDRESS, pkpId)) {
      throw new TypeErrorCtor(`${fn}: pkpId must be a wallet address (0x followed by 40 hex digits)`);
    }
    return pkpId;
  }

  /** A message to sign: a string (signed as UTF-8 text) or `{raw: "0x…"}` bytes, viem's convention. */
  function messageArg(message, fn) {
    if (typeof message === "string") return message;
    if (message !== null && typeof message === "object" && typeof message.raw === "string" && test(HEX, message.raw)) {
      return record({ raw: message.raw });
    }
    throw new TypeErrorCtor(`${fn}: message must be a string or {raw: "0x…"}`);
  }

  function bytesToHex(bytes) {
    let out = "0x";
    for (let i = 0; i < bytes.length; i++) out += (bytes[i] < 16 ? "0" : "") + apply(P.numToString, bytes[i], [16]);
    return out;
  }

  function hexOrText(value, fn) {
    if (typeof value === "string") return test(HEX, value) ? { hex: value } : { text: value };
    if (isView(value) || value instanceof ArrayBufferCtor) {
      const bytes = value instanceof ArrayBufferCtor ? new Uint8ArrayCtor(value) : new Uint8ArrayCtor(value.buffer, value.byteOffset, value.byteLength);
      return { hex: bytesToHex(bytes) };
    }
    throw new TypeErrorCtor(`${fn} expects a string (hex or text) or bytes`);
  }

  const Actions = {
    signMessage(args) {
      return asyncCall("signMessage", { pkpId: requirePkpId(args, "signMessage"), message: messageArg(args.message, "signMessage") });
    },
    signTypedData(args) {
      const pkpId = requirePkpId(args, "signTypedData");
      requireObject(args.typedData, "signTypedData: typedData");
      return asyncCall("signTypedData", { pkpId, typedData: args.typedData });
    },
    signTransaction(args) {
      const pkpId = requirePkpId(args, "signTransaction");
      requireObject(args.transaction, "signTransaction: transaction");
      return asyncCall("signTransaction", { pkpId, transaction: args.transaction });
    },
    signDigest(args) {
      const pkpId = requirePkpId(args, "signDigest");
      const digest = args.digest;
      if (typeof digest !== "string" || !test(HEX32, digest)) {
        throw new TypeErrorCtor("signDigest: digest must be 0x followed by 64 hex digits");
      }
      return asyncCall("signDigest", { pkpId, digest });
    },
    getPublicKey(args) {
      return asyncCall("getPublicKey", { pkpId: requirePkpId(args, "getPublicKey") });
    },
    getPrivateKey(args) {
      return asyncCall("getPrivateKey", { pkpId: requirePkpId(args, "getPrivateKey") });
    },
    encrypt(args) {
      const pkpId = requirePkpId(args, "encrypt");
      const plaintext = args.plaintext;
      if (typeof plaintext !== "string" && !(plaintext !== null && typeof plaintext === "object" && typeof plaintext.raw === "string" && test(HEX, plaintext.raw))) {
        throw new TypeErrorCtor('encrypt: plaintext must be a string or {raw: "0x…"}');
      }
      return asyncCall("encrypt", { pkpId, plaintext: typeof plaintext === "string" ? plaintext : record({ raw: plaintext.raw }) });
    },
    decrypt(args) {
      const pkpId = requirePkpId(args, "decrypt");
      const ciphertext = args.ciphertext;
      if (typeof ciphertext !== "string" || !test(HEX, ciphertext)) throw new TypeErrorCtor("decrypt: ciphertext must be a 0x hex string");
      return asyncCall("decrypt", { pkpId, ciphertext, raw: args.raw === true });
    },
    getActionWalletAddress(args) {
      const cid = args === undefined || args === null ? undefined : requireObject(args, "getActionWalletAddress").cid;
      if (cid !== undefined && typeof cid !== "string") throw new TypeErrorCtor("getActionWalletAddress: cid must be a string");
      return asyncCall("getActionWalletAddress", { cid });
    },
    getActionPublicKey(args) {
      const cid = args === undefined || args === null ? undefined : requireObject(args, "getActionPublicKey").cid;
      if (cid !== undefined && typeof cid !== "string") throw new TypeErrorCtor("getActionPublicKey: cid must be a string");
      return asyncCall("getActionPublicKey", { cid });
    },
    signMessageAsAction(args) {
      return asyncCall("signMessageAsAction", { message: messageArg(requireObject(args, "signMessageAsAction").message, "signMessageAsAction") });
    },
    getActionPrivateKey() {
      return asyncCall("getActionPrivateKey", {});
    },
    setResponse(value) {
      kit.setResponse(value);
    },
    keccak256(value) {
      return syncCall("keccak256", hexOrText(value, "keccak256"));
    },
    sha256(value) {
      return syncCall("sha256", hexOrText(value, "sha256"));
    },
  };

  for (const name of P.objectKeys(Actions)) freeze(Actions[name]);
  const Sigil = freeze({ Actions: freeze(Actions), request: kit.request });
  return { Sigil };
})
