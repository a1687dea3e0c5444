// verifyWebhook against signatures made independently here with node:crypto (not the shared helper it
// uses), so a scheme both sides got wrong the same way would still fail.
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { SigilWebhookError, verifyWebhook } from "./index.ts";

const SECRET = "whsec_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const NOW = 1_800_000_000;
const BODY = JSON.stringify({
  id: "evt_0123456789abcdef01234567",
  type: "payment.credited",
  created: NOW,
  account_id: `0x${"ab".repeat(32)}`,
  data: { payment_intent_id: "pi_1", amount_cents: 500, balance_cents: 500 },
});

const sign = (body: string, t: number, secret = SECRET) =>
  `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;

async function refusal(p: Promise<unknown>): Promise<SigilWebhookError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SigilWebhookError);
  return err as SigilWebhookError;
}

describe("verifyWebhook", () => {
  it("answers the event when the header signs the body with the secret", async () => {
    const event = await verifyWebhook(BODY, sign(BODY, NOW), SECRET, { now: NOW + 10 });
    expect(event).toMatchObject({
      id: "evt_0123456789abcdef01234567",
      type: "payment.credited",
      data: { amount_cents: 500 },
    });
  });

  it("accepts any of several v1 signatures (a rotation) and ignores unknown schemes", async () => {
    const header = `t=${NOW},v0=abc,v1=${"0".repeat(64)},${sign(BODY, NOW).split(",")[1]}`;
    await expect(verifyWebhook(BODY, header, SECRET, { now: NOW })).resolves.toMatchObject({
      type: "payment.credited",
    });
  });

  it("refuses a tampered body, another secret and a signature for another timestamp", async () => {
    expect(
      (await refusal(verifyWebhook(BODY.replace("500", "50000"), sign(BODY, NOW), SECRET, { now: NOW }))).code,
    ).toBe("webhook_signature_invalid");
    expect((await refusal(verifyWebhook(BODY, sign(BODY, NOW, `${SECRET}x`), SECRET, { now: NOW }))).code).toBe(
      "webhook_signature_invalid",
    );
    const v1 = sign(BODY, NOW).split(",")[1];
    expect((await refusal(verifyWebhook(BODY, `t=${NOW + 1},${v1}`, SECRET, { now: NOW }))).code).toBe(
      "webhook_signature_invalid",
    );
  });

  it("refuses a timestamp outside the tolerance, 300 s by default, past or future", async () => {
    await expect(verifyWebhook(BODY, sign(BODY, NOW), SECRET, { now: NOW + 300 })).resolves.toBeDefined();
    const old = await refusal(verifyWebhook(BODY, sign(BODY, NOW), SECRET, { now: NOW + 301 }));
    expect(old.code).toBe("webhook_timestamp_out_of_tolerance");
    expect((await refusal(verifyWebhook(BODY, sign(BODY, NOW + 400), SECRET, { now: NOW }))).code).toBe(
      "webhook_timestamp_out_of_tolerance",
    );
    await expect(
      verifyWebhook(BODY, sign(BODY, NOW), SECRET, { now: NOW + 1000, toleranceSeconds: 1000 }),
    ).resolves.toBeDefined();
  });

  it("refuses a missing or malformed header", async () => {
    for (const header of [undefined, null, "", "t=abc,v1=zz", `v1=${"a".repeat(64)}`, `t=${NOW}`]) {
      expect((await refusal(verifyWebhook(BODY, header, SECRET, { now: NOW }))).code).toBe("webhook_signature_missing");
    }
  });

  it("refuses a signed body that is not a Sigil event", async () => {
    const body = JSON.stringify({ hello: "world" });
    expect((await refusal(verifyWebhook(body, sign(body, NOW), SECRET, { now: NOW }))).code).toBe(
      "webhook_payload_invalid",
    );
  });
});
