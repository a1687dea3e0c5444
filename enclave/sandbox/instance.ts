// One QuickJS WebAssembly instance per run in flight (sandbox.md, Limits; Concurrency and isolation). Each
// instance has its own linear memory, created here with a maximum of the instance's base size plus
// the run's memory limit, so everything the run puts in the VM — its own objects, every copy the
// host makes into it (fetch bodies, host replies), whatever its getters allocate when the host reads
// a thrown error — counts against that one limit, enforced by WebAssembly itself. Once its runtime
// is prepared (runtime.ts), the instance keeps the image of its memory (image.ts) and has it written
// back after every run, so each run starts on the same pristine runtime. A run whose code had to be
// ended from outside (slices.ts) may leave its instance half-way through an allocation, with the
// module's stack pointer not back at its top: such an instance is dropped, never restored or reused,
// and no other run shares it. A clean run's instance goes back to its worker's idle list, unless its
// heap grew past the recycle threshold.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSSyncVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";
import { MemoryImage, readMemoryLayout, type MemoryLayout } from "./image.ts";

const PAGE = 65_536;
/** The linear memory the QuickJS build declares as its minimum (16 MiB): the runtime, its context and the sandbox's core live there. */
export const INSTANCE_BASE_BYTES = 16 << 20;

let compiled: Promise<{ module: WebAssembly.Module; layout: MemoryLayout }> | undefined;

/**
 * The QuickJS build compiled once per thread (instantiating it again costs about 2 ms, compiling it
 * again would cost more), and its memory layout, which the images of its instances follow.
 */
function compiledModule(): Promise<{ module: WebAssembly.Module; layout: MemoryLayout }> {
  compiled ??= (async () => {
    const bytes = readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
    return { module: await WebAssembly.compile(bytes), layout: readMemoryLayout(bytes) };
  })();
  return compiled;
}

export type SandboxInstance = {
  readonly module: QuickJSWASMModule;
  /** The instance's heap size now (it never shrinks). */
  heapBytes(): number;
  /** Whether the heap refused to grow past its maximum since the last `resetRefused()`. */
  readonly refused: boolean;
  resetRefused(): void;
  /** Takes the image of the memory as it is now (once its runtime is prepared; no call may be running). */
  capture(): void;
  /** Writes the image back (no call may be running); throws if none was taken. */
  restore(): void;
  /** The image's size in bytes (0 before it is taken). */
  readonly imageBytes: number;
  /** Where the image's heap ends: the break when it was taken (0 before). */
  readonly imageHeapEnd: number;
};

/**
 * A new instance whose heap may grow to INSTANCE_BASE_BYTES + `memoryLimitBytes` and no further;
 * `onGrow` is told of every growth (the worker adds them up).
 */
export async function createInstance(memoryLimitBytes: number, onGrow?: (bytes: number) => void): Promise<SandboxInstance> {
  const basePages = INSTANCE_BASE_BYTES / PAGE;
  const memory = new WebAssembly.Memory({ initial: basePages, maximum: basePages + Math.ceil(memoryLimitBytes / PAGE) });
  let refused = false;
  // Emscripten's sbrk grows the heap through this method and turns a throw into a failed malloc
  // (QuickJS then throws "out of memory" inside the script): only the refusal is recorded here.
  const grow = memory.grow.bind(memory);
  memory.grow = (deltaPages: number) => {
    try {
      const before = grow(deltaPages);
      onGrow?.(deltaPages * PAGE);
      return before;
    } catch (err) {
      refused = true;
      throw err;
    }
  };
  const { module: wasmModule, layout } = await compiledModule();
  // The package is dual-format; under NodeNext its types resolve to the CommonJS namespace.
  const module = await newQuickJSWASMModuleFromVariant(newVariant(variant as unknown as QuickJSSyncVariant, { wasmModule, wasmMemory: memory }));
  let image: MemoryImage | undefined;
  // The static data as the instance was made: what has changed in it by the time the image is
  // taken tells where the heap ends (image.ts).
  const initialStatics = new Uint8Array(memory.buffer).slice(0, layout.staticEnd);
  return {
    module,
    capture() {
      image = MemoryImage.capture(memory, layout, initialStatics);
    },
    restore() {
      if (!image) throw new Error("the instance has no image to restore");
      image.restore(memory);
    },
    get imageBytes() {
      return image?.byteLength ?? 0;
    },
    get imageHeapEnd() {
      return image?.heapEnd ?? 0;
    },
    heapBytes: () => memory.buffer.byteLength,
    get refused() {
      return refused;
    },
    resetRefused() {
      refused = false;
    },
  };
}
