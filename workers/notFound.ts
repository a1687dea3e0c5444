// What the app answers when no route matched (docs/design/api.md, Errors): a path it serves with other methods
// → 405 method_not_allowed with `Allow`; any other path → 404 not_found. Both in the one error body.
import type { Hono, NotFoundHandler } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import { SigilError } from "../shared/errors.ts";
import type { EdgeEnv } from "./router.ts";
import { errorResponse } from "./errors.ts";

/**
 * The not-found handler of `app`. The methods of a path are read from the app's own routes (its
 * middleware, registered for every method, says nothing about a path), matched on the path as the
 * app's router saw it, so a percent-encoded spelling is the same path here too.
 */
export function notFound(app: Hono<EdgeEnv>): NotFoundHandler<EdgeEnv> {
  // Built at the first miss: by then every route is registered.
  let routes: { router: TrieRouter<string>; methods: string[] } | undefined;
  const allowedOn = (path: string): string[] => {
    if (!routes) {
      const router = new TrieRouter<string>();
      const methods = new Set<string>();
      for (const r of app.routes) {
        if (r.method === "ALL") continue;
        router.add(r.method, r.path, r.method);
        methods.add(r.method);
      }
      routes = { router, methods: [...methods] };
    }
    const { router, methods } = routes;
    const allowed = new Set(methods.filter((m) => router.match(m, path)[0].length > 0));
    if (allowed.size === 0) return [];
    // Hono answers HEAD with the GET route, and the CORS middleware answers OPTIONS on every path.
    if (allowed.has("GET")) allowed.add("HEAD");
    allowed.add("OPTIONS");
    return [...allowed].sort();
  };

  return (c) => {
    const allowed = allowedOn(c.req.path);
    if (allowed.length === 0)
      return errorResponse(c, new SigilError("not_found", `no route for ${c.req.method} ${c.req.path}`));
    const allow = allowed.join(", ");
    c.header("Allow", allow);
    return errorResponse(
      c,
      new SigilError("method_not_allowed", `${c.req.method} is not allowed on ${c.req.path}; it answers ${allow}`, {
        details: { allowed },
      }),
    );
  };
}
