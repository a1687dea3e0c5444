// Work sent with a bound on how much is in flight: the end-to-end bursts (test/e2e/anchored*.test.ts).

/** `task(i)` for each i < `count`, at most `limit` at once, started in order; the results in order. */
export async function pool<T>(count: number, limit: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await task(i);
      }
    }),
  );
  return out;
}
