// The worker's bindings and variables (wrangler.toml is their single description).
export type Env = {
  /** `development`, `test` or `production`. */
  SIGIL_ENV?: string;
  /** Comma-separated enclave base URLs; the edge routes to a healthy one. */
  SIGIL_ENCLAVE_URLS?: string;
  /** Shared secret for the enclaves' internal API, until the attested channel replaces it. */
  SIGIL_ENCLAVE_SECRET?: string;
  /** JSON-RPC URL the edge reads AccountConfig through. */
  SIGIL_RPC_URL?: string;
  /** A public RPC URL clients may use (get_node_chain_config). */
  SIGIL_PUBLIC_RPC_URL?: string;
  SIGIL_CHAIN_ID?: string;
  SIGIL_CHAIN_NAME?: string;
  SIGIL_CONTRACT_ADDRESS?: string;
  SIGIL_VERSION?: string;
};
