// `sigil webhook add|list|remove|deliveries|resend|settings`: the account's webhook endpoints
// (docs/guides/webhooks.md), managed with the master key. `add` prints the endpoint's signing secret, which the
// service never shows again; a receiver checks each delivery with it (the SDK's verifyWebhook).
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../../shared/webhooks.ts";
import {
  dollars,
  fields,
  repeated,
  UsageError,
  valued,
  wholeNumberOption,
  type Command,
  type Group,
} from "./context.ts";

const when = (unix: number | null) => (unix === null ? "" : new Date(unix * 1000).toISOString());

const add: Command = {
  name: "webhook add",
  summary: "register an endpoint; prints its id and its signing secret (shown once)",
  usage: `URL [--event TYPE]…

  Registers URL to receive the account's events, signed with a secret printed here once: keep it.
  --event (repeatable) picks the types: ${WEBHOOK_EVENT_TYPES.join(", ")}; without it, all
  but run.failed. An account has at most 10 endpoints; in production URL must be https and not a
  private, loopback or link-local address.`,
  positionals: { min: 1, max: 1, names: "URL" },
  options: repeated("event"),
  async run({ values, positionals, ctx }) {
    const events = values.event as string[] | undefined;
    for (const e of events ?? []) {
      if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e))
        throw new UsageError(`--event ${e}: not an event type (${WEBHOOK_EVENT_TYPES.join(", ")})`);
    }
    const created = await ctx
      .keyed()
      .createWebhook({ url: positionals[0] as string, ...(events ? { events: events as WebhookEventType[] } : {}) });
    ctx.print(created, () =>
      fields([
        ["id", created.id],
        ["url", created.url],
        ["events", created.events.join(", ")],
        ["secret", `${created.secret}   (shown only now: keep it to verify deliveries)`],
      ]),
    );
  },
};

const list: Command = {
  name: "webhook list",
  summary: "the account's endpoints",
  usage: `

  Lists the account's webhook endpoints (never their secrets).`,
  async run({ ctx }) {
    ctx.list(await ctx.keyed().listWebhooks(), "no webhook endpoints", [
      ["ID", (e) => e.id],
      ["URL", (e) => e.url],
      ["EVENTS", (e) => e.events.join(",")],
      ["CREATED", (e) => when(e.created)],
    ]);
  },
};

const remove: Command = {
  name: "webhook remove",
  summary: "remove an endpoint, its pending deliveries and its log",
  usage: `ID

  Removes the endpoint ID (we_…).`,
  positionals: { min: 1, max: 1, names: "ID" },
  async run({ positionals, ctx }) {
    const answer = await ctx.keyed().deleteWebhook({ webhook_id: positionals[0] as string });
    ctx.print(answer, () => `removed ${answer.id}`);
  },
};

const deliveries: Command = {
  name: "webhook deliveries",
  summary: "an endpoint's delivery log, newest first, every attempt",
  usage: `ID [--page N] [--page-size N]

  Prints the deliveries of endpoint ID (we_…): each event, its status (pending, succeeded,
  failed) and every attempt with the receiver's status or the error.`,
  positionals: { min: 1, max: 1, names: "ID" },
  options: valued("page", "page-size"),
  async run({ values, positionals, ctx }) {
    const page = wholeNumberOption(values, "page") ?? 0;
    const size = wholeNumberOption(values, "page-size", { min: 1 }) ?? 20;
    const log = await ctx
      .keyed()
      .listWebhookDeliveries({ webhook_id: positionals[0] as string, page_number: page, page_size: size });
    ctx.list(log, "no deliveries", [
      ["DELIVERY", (d) => d.id],
      ["EVENT", (d) => d.event_id],
      ["TYPE", (d) => d.event_type],
      ["STATUS", (d) => d.status],
      [
        "ATTEMPTS",
        (d) => d.attempts.map((a) => (a.status_code === null ? (a.error ?? "?") : String(a.status_code))).join(" | "),
      ],
      ["NEXT", (d) => when(d.next_attempt_at)],
    ]);
  },
};

const resend: Command = {
  name: "webhook resend",
  summary: "send a delivery or an event to an endpoint again, now",
  usage: `ID EVENT

  Sends EVENT (an event id evt_…, or a delivery id dlv_…) to endpoint ID again at once, with a
  new 24 h retry window. The event keeps its id, so a receiver that de-duplicates drops a copy.`,
  positionals: { min: 2, max: 2, names: "ID EVENT" },
  async run({ positionals, ctx }) {
    const d = await ctx
      .keyed()
      .resendWebhookDelivery({ webhook_id: positionals[0] as string, delivery_id: positionals[1] as string });
    ctx.print(d, () => `re-sending ${d.event_id} (${d.event_type}) to ${d.endpoint_id} as ${d.id}`);
  },
};

const settings: Command = {
  name: "webhook settings",
  summary: "show or set balance.low's threshold",
  usage: `[--balance-low CENTS]

  Prints the account's webhook settings; --balance-low sets the threshold in cents under which
  balance.low fires, once per crossing (0 turns it off).`,
  options: valued("balance-low"),
  async run({ values, ctx }) {
    const client = ctx.keyed();
    const cents = wholeNumberOption(values, "balance-low");
    const s =
      cents === undefined
        ? await client.getWebhookSettings()
        : await client.updateWebhookSettings({ balance_low_cents: cents });
    ctx.print(
      s,
      () => `balance.low threshold ${dollars(s.balance_low_cents)}${s.balance_low_cents === 0 ? " (off)" : ""}`,
    );
  },
};

export const webhookGroup: Group = {
  name: "webhook",
  summary: "webhooks: signed events POSTed to the account's own endpoints",
  commands: [add, list, remove, deliveries, resend, settings],
};
