// Reads the CLI (bin/cli) and the dashboard (dashboard/src) both make through the client: a whole
// list, page after page. Not part of the package's exports; nothing here touches Node or the DOM,
// so both can load it.

/** The items of a paged list (`client.all.…`), page after page: every one, or the first `most`. */
export async function collect<T>(items: AsyncIterable<T>, most = Number.POSITIVE_INFINITY): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) {
    all.push(item);
    if (all.length >= most) break;
  }
  return all;
}
