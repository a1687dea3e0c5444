// The parts of solc-js (which ships no types) that contracts/compile.ts uses.
declare module "solc" {
  type ImportCallback = (path: string) => { contents: string } | { error: string };
  const solc: {
    version(): string;
    compile(input: string, callbacks?: { import?: ImportCallback }): string;
  };
  export default solc;
}
