// One error hierarchy for both sides (shared/errors.ts): every error class the code throws on purpose
// is a SigilError with a code from errorStatus and that code's status. The specialised ones (channel,
// attestation, sandbox) are not written for a client (`expose` false), so the handlers that turn
// errors into answers treat them as internal: `internal_error`, and none of their message. The
// edge's own classes and its error handler are checked inside workerd (workers/errors.test.ts).
import { describe, expect, it } from "vitest";
import { errorAnswer } from "../../enclave/operations/index.ts";
import { createLogger } from "../../shared/log.ts";
import { FetchError } from "../../enclave/sandbox/net/guardedFetch.ts";
import { CodedError } from "../../enclave/sandbox/runtime.ts";
import { AttestationError, QuoteVerificationError } from "../../shared/attestation/errors.ts";
import { ChannelError } from "../../shared/channel/channel.ts";
import { ChannelDeliveryError, ChannelUnavailableError } from "../../shared/channel/client.ts";
import { errorBody, errorStatus, isExposed, sentTransactionOf, SigilError } from "../../shared/errors.ts";

const SECRET_URL = "http://10.1.2.3:9443/channel/v1";

/** One instance of each specialised class, with its expected name and code; every message names an internal URL. */
const specialised: Array<[string, SigilError, string]> = [
  ["ChannelError", new ChannelError("bad_signature", `refused by ${SECRET_URL}`), "enclave_unavailable"],
  ["ChannelUnavailableError", new ChannelUnavailableError(`${SECRET_URL} does not answer`), "enclave_unavailable"],
  [
    "ChannelDeliveryError",
    new ChannelDeliveryError(`no answer from ${SECRET_URL}`, { cause: new Error("reset") }),
    "enclave_unavailable",
  ],
  [
    "AttestationError",
    new AttestationError("invalid_quote", `the quote from ${SECRET_URL} is short`),
    "invalid_request",
  ],
  ["QuoteVerificationError", new QuoteVerificationError(`TCBInfo expired at ${SECRET_URL}`), "invalid_request"],
  ["CodedError", new CodedError("limit_exceeded", `too many fetches to ${SECRET_URL}`), "invalid_request"],
  ["FetchError", new FetchError("network_refused", `fetch to ${SECRET_URL} refused`), "permission_denied"],
];

describe("the error hierarchy", () => {
  it.each(specialised)(
    "%s is an Error and a SigilError, named for its class, with a code and that code's status",
    (name, err, code) => {
      expect(err).toBeInstanceOf(Error);
      expect(err).toBeInstanceOf(SigilError);
      expect(err.name).toBe(name);
      expect(err.code).toBe(code);
      expect(Object.hasOwn(errorStatus, err.code)).toBe(true);
      expect(err.status).toBe(errorStatus[err.code]);
    },
  );

  it.each(specialised)(
    "%s is not for the client: isExposed is false and its error body keeps nothing of its message",
    (_name, err) => {
      expect(err.expose).toBe(false);
      expect(isExposed(err)).toBe(false);
      const body = errorBody(err, "r-1");
      expect(body).toStrictEqual({
        error: { code: "internal_error", message: "an internal error occurred", request_id: "r-1" },
      });
    },
  );

  it.each(specialised)(
    "%s reaching the enclave's errorAnswer becomes a 500 internal_error with nothing of its message",
    (_name, err) => {
      const lines: string[] = [];
      const answer = errorAnswer(err, {
        requestId: "r-2",
        log: createLogger("debug", {}, (line) => lines.push(line)),
      } as Parameters<typeof errorAnswer>[1]);
      expect(answer.status).toBe(500);
      expect({ error: answer.error }).toStrictEqual({
        error: { code: "internal_error", message: "an internal error occurred", request_id: "r-2" },
      });
      expect(lines.join("\n")).toContain("10.1.2.3"); // the log has it, with the request id
    },
  );

  it("keeps a SigilError made directly for the client", () => {
    const direct = new SigilError("wallet_not_found", "No such wallet.");
    expect(direct.expose).toBe(true);
    expect(isExposed(direct)).toBe(true);
    expect(errorBody(direct, "r").error).toStrictEqual({
      code: "wallet_not_found",
      message: "No such wallet.",
      request_id: "r",
    });
  });

  it("reads a sent transaction's hash only from an error for the client", () => {
    const hash = `0x${"ab".repeat(32)}`;
    expect(
      sentTransactionOf(new SigilError("internal_error", "reverted", { details: { transaction_hash: hash } })),
    ).toBe(hash);
    expect(
      sentTransactionOf(
        new SigilError("internal_error", "reverted", { details: { transaction_hash: hash }, expose: false }),
      ),
    ).toBeUndefined();
  });

  it("gives CodedError the script's code where the service has it, internal_error for a key mismatch, invalid_request otherwise", () => {
    expect(new CodedError("permission_denied", "m")).toMatchObject({
      code: "permission_denied",
      scriptCode: "permission_denied",
      status: 403,
    });
    expect(new CodedError("chain_unavailable", "m")).toMatchObject({ code: "chain_unavailable", status: 503 });
    expect(new CodedError("wallet_key_mismatch", "m")).toMatchObject({
      code: "internal_error",
      scriptCode: "wallet_key_mismatch",
    });
    expect(new CodedError(null, "m", "TypeError")).toMatchObject({
      code: "invalid_request",
      scriptCode: null,
      kind: "TypeError",
    });
  });

  it("keeps ChannelError's reason and retry time, and FetchError's reason", () => {
    expect(new ChannelError("too_many_openings", "m", { retryAfterSeconds: 4 })).toMatchObject({
      reason: "too_many_openings",
      retryAfterSeconds: 4,
    });
    expect(new FetchError("timeout", "m")).toMatchObject({ reason: "timeout", code: "internal_error" });
  });
});
