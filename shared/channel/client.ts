// The caller's end of the channel, as the edge (and test tools) use it: fetch an enclave's channel
// key with its quote (`GET /channel`), have it verified, pin it, open a session to it and send
// operations sealed in that session (`POST /channel/v1`) and read their answers. The key is verified again after
// `repinAfterMs` and whenever the enclave says it does not hold the key a request was sealed to (it
// restarted with a new one); a session the enclave no longer holds is replaced. Either way the
// request is sent once more, in a new session. No Node-only APIs.
import { z } from "zod";
import { SigilError } from "../errors.ts";
import { Flight } from "../flight.ts";
import {
  ChannelError,
  ChannelSession,
  channelReportData,
  fromBase64Url,
  operationAnswerSchema,
  toBase64Url,
  type Aead,
  type EdgeIdentity,
  type OperationAnswer,
  type OperationRequest,
} from "./channel.ts";

/** What `GET /channel` answers: the key and the evidence that binds it to the enclave's code. */
export const channelDocumentSchema = z.object({
  public_key: z.string().regex(/^[A-Za-z0-9_-]+$/),
  quote: z.string().regex(/^(0x)?[0-9a-fA-F]+$/),
  event_log: z.string(),
  instance_id: z.string().optional(),
  simulated: z.boolean().optional(),
});
export type ChannelDocument = z.infer<typeof channelDocumentSchema>;

/** Decides whether an enclave's channel document may be trusted; throws (with the reason) if not. */
export type ChannelVerifier = (doc: ChannelDocument, base: string, expectedReportData: Uint8Array) => Promise<void>;

/** The answer the enclave gives inside the seal. */
export type ChannelAnswer = OperationAnswer;

/** The enclave's refusal of a sealed request, outside the seal (`{channel_error: reason}`). */
const refusalSchema = z.object({ channel_error: z.string() });

/**
 * Nothing reached the enclave (its key could not be fetched or verified, or it did not answer a probe): safe to send elsewhere.
 * `enclave_unavailable`, not for a client (`expose` false: the message names the enclave's URL).
 */
export class ChannelUnavailableError extends SigilError {
  override readonly name = "ChannelUnavailableError";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("enclave_unavailable", message, { ...options, expose: false });
  }
}

/**
 * The sealed request was sent but no answer came back that opens: the enclave may have acted on it
 * (sent a transaction, run a script). Sending it to another enclave could do the work twice.
 * `enclave_unavailable`, not for a client (`expose` false: the message names the enclave's URL).
 */
export class ChannelDeliveryError extends SigilError {
  override readonly name = "ChannelDeliveryError";
  constructor(message: string, options: { cause?: unknown } = {}) {
    super("enclave_unavailable", message, { ...options, expose: false });
  }
}

type Pin = { publicKey: Uint8Array; until: number; session?: Flight<ChannelSession> };

/**
 * How long a caller waits for a key fetch or a session opening another caller started (beyond the
 * fetch's own 30 s timeout) before it makes its own. Callers that did not start one wait by looking,
 * never by awaiting its promise: in a Worker the other caller is another request (shared/flight.ts).
 */
const JOIN_WAIT_MS = 35_000;

export class ChannelClient {
  readonly #identity: Promise<EdgeIdentity>;
  readonly #verify: ChannelVerifier;
  readonly #repinAfterMs: number;
  readonly #fetch: typeof fetch;
  readonly #pins = new Map<string, Flight<Pin>>();
  readonly #aead: Aead | undefined;

  constructor(args: {
    identity: Promise<EdgeIdentity> | EdgeIdentity;
    verify: ChannelVerifier;
    repinAfterMs?: number;
    fetch?: typeof fetch;
    aead?: Aead;
  }) {
    this.#aead = args.aead;
    this.#identity = Promise.resolve(args.identity);
    this.#verify = args.verify;
    this.#repinAfterMs = args.repinAfterMs ?? 10 * 60_000;
    this.#fetch = args.fetch ?? ((input, init) => fetch(input, init));
  }

  /**
   * The pinned key of `base`, fetched and verified when there is none, it is too old, or it is the
   * one the enclave just refused (`refused`); concurrent callers share one fetch (the others wait by
   * looking, JOIN_WAIT_MS at most).
   */
  async #pin(base: string, refused?: Pin): Promise<Pin> {
    const known = this.#pins.get(base);
    if (known) {
      const pin = await known.join(JOIN_WAIT_MS).catch(() => undefined);
      if (pin && pin !== refused && pin.until > Date.now()) return pin;
      if (this.#pins.get(base) !== known) return this.#pin(base, refused);
    }
    const pending = new Flight(() => this.#fetchAndVerify(base));
    this.#pins.set(base, pending);
    pending.promise.catch(() => {
      if (this.#pins.get(base) === pending) this.#pins.delete(base);
    });
    return pending.promise;
  }

  async #fetchAndVerify(base: string): Promise<Pin> {
    const res = await this.#fetch(`${base}/channel`, { signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw new ChannelUnavailableError(`${base}/channel answered ${res.status}`);
    const doc = channelDocumentSchema.parse(await res.json());
    const publicKey = fromBase64Url(doc.public_key);
    await this.#verify(doc, base, await channelReportData(publicKey));
    return { publicKey, until: Date.now() + this.#repinAfterMs };
  }

  /** The pin's session, or a new one when there is none, it is spent, or it is the one the enclave refused (concurrent callers share one, as #pin). */
  async #session(pin: Pin, refused?: ChannelSession): Promise<ChannelSession> {
    const known = pin.session;
    if (known) {
      const session = await known.join(JOIN_WAIT_MS).catch(() => undefined);
      if (session && session !== refused && session.usable()) return session;
      if (pin.session !== known) return this.#session(pin, refused);
    }
    const opening = new Flight(async () =>
      ChannelSession.open({
        enclavePublicKey: pin.publicKey,
        identity: await this.#identity,
        ...(this.#aead ? { aead: this.#aead } : {}),
      }),
    );
    pin.session = opening;
    opening.promise.catch(() => {
      if (pin.session === opening) delete pin.session;
    });
    return opening.promise;
  }

  /**
   * Checks that the enclave at `base` answers at all (`HEAD /channel`), before a request that must
   * not be sent twice goes to an enclave that failed recently; throws ChannelUnavailableError if not.
   */
  async probe(base: string): Promise<void> {
    let res: Response;
    try {
      res = await this.#fetch(`${base}/channel`, { method: "HEAD", signal: AbortSignal.timeout(5_000) });
    } catch (err) {
      throw new ChannelUnavailableError(
        `${base} does not answer: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    if (!res.ok) throw new ChannelUnavailableError(`${base}/channel answered ${res.status}`);
  }

  /**
   * The channel key the enclave at `base` holds now (base64url), fetched and verified afresh, and
   * pinned: each enclave process makes its own, so it names the process. Throws
   * ChannelUnavailableError when the key cannot be had.
   */
  async currentKey(base: string): Promise<string> {
    try {
      const known = await this.#pins
        .get(base)
        ?.join(JOIN_WAIT_MS)
        .catch(() => undefined);
      return toBase64Url((await this.#pin(base, known)).publicKey);
    } catch (err) {
      if (err instanceof ChannelUnavailableError) throw err;
      throw new ChannelUnavailableError(`${base}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  /** Forgets what is pinned for `base` (the enclave is gone; its next key is verified afresh). */
  forget(base: string): void {
    this.#pins.delete(base);
  }

  /**
   * Sends one operation through the channel to the enclave at `base` and returns its answer. An
   * enclave that no longer holds the pinned key (or the session) gets the request once more, in a
   * new session (to its new key). `beforeSeal` is awaited with the key each time the request is
   * about to be sealed to one; if it throws, nothing is sent (ChannelUnavailableError).
   */
  async call(
    base: string,
    request: OperationRequest,
    options: { timeoutMs?: number; beforeSeal?: (publicKey: string) => Promise<void> } = {},
  ): Promise<ChannelAnswer> {
    let refusedPin: Pin | undefined;
    let refusedSession: ChannelSession | undefined;
    for (let attempt = 0; ; attempt++) {
      let call;
      let pin: Pin;
      let session: ChannelSession;
      try {
        pin = await this.#pin(base, refusedPin);
        await options.beforeSeal?.(toBase64Url(pin.publicKey));
        session = await this.#session(pin, refusedSession);
        call = await session.seal(request);
      } catch (err) {
        if (err instanceof ChannelUnavailableError) throw err;
        throw new ChannelUnavailableError(`${base}: ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
      }
      let res: Response;
      let text: string;
      try {
        res = await this.#fetch(`${base}/channel/v1`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(call.sealed),
          signal: AbortSignal.timeout(options.timeoutMs ?? 150_000),
        });
        text = await res.text();
      } catch (err) {
        throw new ChannelDeliveryError(
          `no answer from ${base}/channel/v1: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new ChannelDeliveryError(`${base}/channel/v1 answered ${res.status} without JSON`);
      }
      const refusal = refusalSchema.safeParse(json);
      if (refusal.success) {
        // Refused before it was opened: nothing was done.
        const reason = refusal.data.channel_error;
        if (attempt === 0 && reason === "unknown_channel_key") {
          refusedPin = pin;
          continue;
        }
        if (attempt === 0 && reason === "unknown_session") {
          refusedSession = session;
          continue;
        }
        throw new ChannelError(reason as never, `the enclave refused the sealed request: ${reason}`);
      }
      // A 503 outside the seal is the enclave saying it is not ready: it did not open the request.
      if (res.status === 503) throw new ChannelUnavailableError(`${base}/channel/v1 answered 503`);
      if (!res.ok) throw new ChannelDeliveryError(`${base}/channel/v1 answered ${res.status}`);
      let opened: string;
      try {
        opened = await call.openResponse(json);
      } catch (err) {
        throw new ChannelDeliveryError(
          `the answer of ${base} does not open: ${err instanceof Error ? err.message : String(err)}`,
          { cause: err },
        );
      }
      const answer = operationAnswerSchema.safeParse(JSON.parse(opened));
      if (!answer.success) throw new ChannelDeliveryError("the enclave's sealed answer is not an answer");
      return answer.data as ChannelAnswer;
    }
  }
}
