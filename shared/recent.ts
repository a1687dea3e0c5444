// A bounded memory of recent values: at most `max` entries, the oldest forgotten first. What a
// process remembers to spare work (a key's hash, a derived address, a script's CID, an action's
// hash) is kept this way, so no client can make it grow without end.
export class Recent<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #max: number;

  constructor(max: number) {
    this.#max = max;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  /** Remembers `value` under `key`, forgetting the oldest entry when the memory is full; answers `value`. */
  set(key: K, value: V): V {
    if (!this.#entries.has(key) && this.#entries.size >= this.#max) {
      this.#entries.delete(this.#entries.keys().next().value as K);
    }
    this.#entries.set(key, value);
    return value;
  }

  /** Forgets everything. */
  clear(): void {
    this.#entries.clear();
  }

  /** The value under `key`, or the one `make` makes, remembered. */
  getOrMake(key: K, make: () => V): V {
    const known = this.#entries.get(key);
    return known === undefined ? this.set(key, make()) : known;
  }
}
