import inspector from "node:inspector";
import { Worker } from "node:worker_threads";
const session = new inspector.Session(); session.connect();
session.on("NodeWorker.attachedToWorker", (m) => console.log("attached", JSON.stringify(m.params)));
await new Promise((res) => session.post("NodeWorker.enable", { waitForDebuggerOnStart: false }, res));
const ws = [0,1].map((i) => new Worker(`require("worker_threads").parentPort.postMessage(require("worker_threads").threadId); setInterval(()=>{}, 1000)`, { eval: true }));
for (const w of ws) w.on("message", (m) => console.log("worker says threadId", m, "w.threadId", w.threadId));
await new Promise(r => setTimeout(r, 800));
for (const w of ws) await w.terminate();
