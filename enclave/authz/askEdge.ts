// A request an enclave makes of the edge that sent it a run, on the run's behalf: reserving room in
// a wallet's budgets (budgets.ts), numbering and recording a transaction (operations/send.ts). The
// edge's URL and the run's token came sealed with the run; the token goes there and nowhere else.
import type { BudgetAccess } from "../../shared/guardrails/budgets.ts";

/**
 * How long one attempt waits, and how many are made, before the request fails. The last waits until
 * the run's own deadline (at least this long): the edge may have done what was asked (a budget
 * reserved, a nonce held) and be slow to say so, and a run that gave up on it would leave it done
 * without knowing.
 */
const ATTEMPT_TIMEOUT_MS = 2_000;
const ATTEMPTS = 3;
/** A request's last attempt waits this long when no run deadline is given. */
export const PATIENCE_MS = 30_000;

/**
 * Posts `body` to `path` at the edge that sent the run (`access`: its URL and the run's token) and
 * returns its JSON answer once `isAnswer` accepts it. Each attempt waits ATTEMPT_TIMEOUT_MS but the
 * last, which waits until `deadline`: the edge may have done what was asked and be slow to say so.
 * A 4xx is the same next time, so it ends the attempts. Throws an Error saying what the last attempt met.
 */
export async function askEdge<T>(
  access: BudgetAccess,
  path: string,
  body: unknown,
  isAnswer: (answer: Record<string, unknown>) => boolean,
  options: { fetchImpl?: typeof fetch; deadline?: number; allowHttp?: boolean } = {},
): Promise<T> {
  const fetchImpl = options.fetchImpl ?? fetch;
  const deadline = options.deadline ?? Date.now() + PATIENCE_MS;
  const allowHttp = options.allowHttp ?? true;
  let url: URL;
  try {
    url = new URL(path, access.url);
  } catch {
    throw new Error("the edge's URL is not http(s)");
  }
  if (url.protocol !== "https:" && !(allowHttp && url.protocol === "http:"))
    throw new Error(`the edge's URL is not ${allowHttp ? "http(s)" : "https"}`);
  let last = "";
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    try {
      const res = await fetchImpl(url, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${access.token}` },
        body: JSON.stringify(body),
        // The token goes to the edge's URL and nowhere else.
        redirect: "error",
        signal: AbortSignal.timeout(
          attempt < ATTEMPTS ? ATTEMPT_TIMEOUT_MS : Math.max(ATTEMPT_TIMEOUT_MS, deadline - Date.now()),
        ),
      });
      const text = await res.text();
      if (res.ok) {
        const answer = JSON.parse(text) as Record<string, unknown>;
        if (!isAnswer(answer)) throw new Error("the edge's answer is not one it should give");
        return answer as T;
      }
      last = `the edge answered ${res.status}`;
      if (res.status >= 400 && res.status < 500) break;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
  }
  throw new Error(last);
}
