// The worker's bindings and variables, as `npm run types:edge` (`wrangler types`) generates them from
// wrangler.toml into worker-configuration.d.ts: wrangler.toml is their one description. The variables
// are read only through config.ts, which validates them and says what each means; the Durable Object
// bindings are typed by the classes index.ts exports.
export type Env = Cloudflare.Env;
