// One QuickJS WebAssembly instance per run in flight (docs/design/sandbox.md, Limits; Concurrency and isolation). Each
// instance has its own linear memory, created here with a maximum of what its runtime needs plus the
// run's memory limit, so everything the run puts in the VM — its own objects, every copy the host
// makes into it (fetch bodies, host replies), whatever its getters allocate when the host reads a
// thrown error — counts against that one limit, enforced by WebAssembly itself. The build is relaid
// first (layout.ts): a stack of the run's stack limit and a margin, the heap right above it, a memory
// that starts small. Once its runtime is prepared (runtime.ts), the instance keeps the image of its
// memory (image.ts) and makes the whole memory that image again after every run, so each run starts on
// the same pristine runtime and nothing of the last run is left in any byte. A run whose code had to
// be ended from outside (slices.ts) may leave its instance half-way through an allocation, with the
// module's stack pointer not back at its top: such an instance is never restored or reused, and no
// other run shares it; its memory is zeroed when it is dropped. A clean run's instance goes back to
// its worker's idle list, unless its memory grew past the recycle threshold.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import variant from "@jitl/quickjs-wasmfile-release-sync";
import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import { MemoryImage } from "./image.ts";
import { relayBuild, STACK_MARGIN_BYTES, type MemoryLayout } from "./layout.ts";

const PAGE = 65_536;
/**
 * The memory an instance starts with above its stack: the prepared runtime (about 330 KiB) and room
 * for a small run, which needs no growth. Everything above the image's break is zeroed after each run,
 * so room never used costs every run its clearing; a run that needs more grows the memory.
 */
const INITIAL_HEAP_BYTES = 384 << 10;
/**
 * The heap's room beyond the run's memory limit, up to which WebAssembly lets the memory grow: QuickJS's
 * own limit counts what it allocates, not the allocator's overhead and fragmentation, and the runtime
 * itself. The build's own layout left about this much (its 16 MiB base, less data and stack).
 */
const HEAP_MARGIN_BYTES = 12 << 20;

const compiled = new Map<number, Promise<{ module: WebAssembly.Module; layout: MemoryLayout }>>();

/**
 * The QuickJS build relaid for a stack of `stackBytes` and compiled once per thread (instantiating it
 * again costs about 2 ms, compiling it again would cost more), and its memory layout.
 */
function compiledModule(stackBytes: number): Promise<{ module: WebAssembly.Module; layout: MemoryLayout }> {
  let made = compiled.get(stackBytes);
  if (!made) {
    made = (async () => {
      const bytes = readFileSync(createRequire(import.meta.url).resolve("@jitl/quickjs-wasmfile-release-sync/wasm"));
      const relaid = relayBuild(bytes, stackBytes);
      return { module: await WebAssembly.compile(relaid.wasm as Uint8Array<ArrayBuffer>), layout: relaid.layout };
    })();
    compiled.set(stackBytes, made);
  }
  return made;
}

export type SandboxInstance = {
  readonly module: QuickJSWASMModule;
  /** The instance's memory size now (it never shrinks). */
  heapBytes(): number;
  /** The memory's size when the image was taken (0 before). */
  readonly preparedBytes: number;
  /** Whether the heap refused to grow past its maximum since the last `resetRefused()`. */
  readonly refused: boolean;
  resetRefused(): void;
  /** Takes the image of the memory as it is now (once its runtime is prepared; no call may be running). */
  capture(): void;
  /** Makes the whole memory the image again (no call may be running); throws if none was taken. */
  restore(): void;
  /** Zeroes the whole memory of an instance that serves no run any more (its runtime is gone with it). */
  wipe(): void;
  /** Whether every byte of the memory is the image's (reads it all: tests and fuzzing only). */
  isPristine(): boolean;
  /** The image's size in bytes (0 before it is taken). */
  readonly imageBytes: number;
  /** Where the image's heap ends: the break when it was taken (0 before). */
  readonly imageHeapEnd: number;
  /** The memory's layout: data, stack, heap. */
  readonly layout: MemoryLayout;
};

/**
 * A new instance whose heap may grow to the run's memory limit and a margin, and no further; `onGrow`
 * is told of every growth (the worker adds them up).
 */
export async function createInstance(
  limits: { memoryLimitBytes: number; stackLimitBytes: number },
  onGrow?: (bytes: number) => void,
): Promise<SandboxInstance> {
  const { module: wasmModule, layout } = await compiledModule(limits.stackLimitBytes + STACK_MARGIN_BYTES);
  const pages = (bytes: number) => Math.ceil(bytes / PAGE);
  const memory = new WebAssembly.Memory({
    initial: pages(layout.heapStart + INITIAL_HEAP_BYTES),
    maximum: pages(layout.heapStart + HEAP_MARGIN_BYTES + limits.memoryLimitBytes),
  });
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
  // The package is dual-format; under NodeNext its types resolve to the CommonJS namespace.
  const module = await newQuickJSWASMModuleFromVariant(
    newVariant(variant as unknown as QuickJSSyncVariant, { wasmModule, wasmMemory: memory }),
  );
  let image: MemoryImage | undefined;
  let preparedBytes = 0;
  // The static data as the instance was made: what has changed in it by the time the image is
  // taken tells where the heap ends (image.ts).
  const initialStatics = new Uint8Array(memory.buffer).slice(0, layout.staticEnd);
  return {
    module,
    layout,
    capture() {
      image = MemoryImage.capture(memory, layout, initialStatics);
      preparedBytes = memory.buffer.byteLength;
    },
    restore() {
      if (!image) throw new Error("the instance has no image to restore");
      image.restore(memory);
    },
    wipe() {
      new Uint8Array(memory.buffer).fill(0);
    },
    isPristine() {
      return image?.isPristine(memory) ?? false;
    },
    get imageBytes() {
      return image?.byteLength ?? 0;
    },
    get imageHeapEnd() {
      return image?.heapEnd ?? 0;
    },
    get preparedBytes() {
      return preparedBytes;
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
