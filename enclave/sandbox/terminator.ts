// Ends the JavaScript a sandbox worker is executing now without ending the worker: V8's
// TerminateExecution, reached through Node's in-process inspector (the main thread's session, the
// NodeWorker domain, `Runtime.terminateExecution` sent to the worker). V8 delivers it as an
// interrupt, which it checks inside WebAssembly loops too, so it stops a QuickJS built-in in the
// middle; the termination unwinds the worker's stack to its event loop and is then cancelled, and
// the worker goes on serving its other runs. No port is opened: the session is in-process.
// slices.ts decides when it may be sent, so that it lands only in the slice it was meant for.
import inspector from "node:inspector";

type Post = (method: string, params?: object) => Promise<unknown>;

export class Terminator {
  readonly #post: Post;
  /** Inspector session id of each worker, by the worker's (unique) name. */
  readonly #sessions = new Map<string, string>();

  private constructor(session: inspector.Session) {
    this.#post = (method, params) =>
      new Promise((resolve, reject) =>
        session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result))),
      );
  }

  static #shared: Promise<Terminator | undefined> | undefined;

  /**
   * The process's one terminator (a second inspector session attaches to no workers once a first
   * has been closed, so the session lives as long as the process). Undefined when this Node has no
   * inspector: then a stuck worker can only be replaced whole.
   */
  static shared(): Promise<Terminator | undefined> {
    Terminator.#shared ??= Terminator.#start();
    return Terminator.#shared;
  }

  static async #start(): Promise<Terminator | undefined> {
    if (!process.features.inspector) return undefined;
    const session = new inspector.Session();
    session.connect();
    const terminator = new Terminator(session);
    session.on("NodeWorker.attachedToWorker", (message) => {
      const { sessionId, workerInfo } = message.params as { sessionId: string; workerInfo: { title: string } };
      // The inspector numbers workers in the order they attach, not by thread: a worker is known by
      // the name it was given, which its title ("[worker <thread>] <name>") ends with.
      const name = /^\[worker \d+\] (.*)$/.exec(workerInfo.title)?.[1];
      if (name !== undefined) terminator.#sessions.set(name, sessionId);
    });
    session.on("NodeWorker.detachedFromWorker", (message) => {
      const { sessionId } = message.params as { sessionId: string };
      for (const [name, id] of terminator.#sessions) if (id === sessionId) terminator.#sessions.delete(name);
    });
    try {
      await terminator.#post("NodeWorker.enable", { waitForDebuggerOnStart: false });
    } catch {
      session.disconnect();
      return undefined;
    }
    return terminator;
  }

  /** Whether the worker named `name` is attached (workers attach shortly after they start). */
  attached(name: string): boolean {
    return this.#sessions.has(name);
  }

  /** Terminates what the worker named `name` is executing now; false if it cannot be reached. */
  async terminate(name: string): Promise<boolean> {
    const sessionId = this.#sessions.get(name);
    if (sessionId === undefined) return false;
    try {
      await this.#post("NodeWorker.sendMessageToWorker", {
        sessionId,
        message: JSON.stringify({ id: 1, method: "Runtime.terminateExecution" }),
      });
      return true;
    } catch {
      return false;
    }
  }
}
