import { describe, expect, it } from "vitest";
import { Flight, FlightWaitExpired } from "./flight.ts";

/** A promise and its resolvers, for work that ends when the test says. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/**
 * A promise whose `then` counts who follows it: a joiner must never follow the work's own promise
 * (in a Worker that promise belongs to the request that started the work).
 */
class Followed<T> extends Promise<T> {
  static follows = 0;
  // biome-ignore lint/suspicious/noThenProperty: the point of the test is to count who calls it.
  override then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    Followed.follows++;
    return super.then(onfulfilled, onrejected);
  }
}

describe("Flight", () => {
  it("gives a joiner the work's value once it settles, by looking, never by following the work's promise", async () => {
    const work = deferred<number>();
    Followed.follows = 0;
    const flight = new Flight(() => new Followed<number>((resolve, reject) => work.promise.then(resolve, reject)));
    const followsByFlight = Followed.follows;
    expect(flight.settled).toBe(false);
    const joiners = [flight.join(5_000), flight.join(5_000), flight.join(5_000)];
    await new Promise((r) => setTimeout(r, 20));
    expect(Followed.follows).toBe(followsByFlight);
    work.resolve(42);
    expect(await Promise.all(joiners)).toEqual([42, 42, 42]);
    expect(Followed.follows).toBe(followsByFlight);
    expect(flight.settled).toBe(true);
    expect(flight.outcome()).toBe(42);
    expect(await flight.join(0)).toBe(42);
  });

  it("throws the work's error to every joiner", async () => {
    const work = deferred<number>();
    const flight = new Flight(() => work.promise);
    flight.promise.catch(() => undefined);
    const joined = flight.join(5_000);
    work.reject(new Error("chain down"));
    await expect(joined).rejects.toThrow("chain down");
    expect(() => flight.outcome()).toThrow("chain down");
  });

  it("tells a joiner that waited its longest (the work's request may be gone) and keeps the work going", async () => {
    const work = deferred<string>();
    const flight = new Flight(() => work.promise);
    await expect(flight.join(30)).rejects.toBeInstanceOf(FlightWaitExpired);
    work.resolve("late");
    expect(await flight.promise).toBe("late");
    expect(await flight.join(30)).toBe("late");
  });

  it("says it has not settled when asked for its outcome too soon", () => {
    const flight = new Flight(() => new Promise<number>(() => undefined));
    expect(() => flight.outcome()).toThrow(/not settled/);
  });
});
