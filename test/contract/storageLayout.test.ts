// The upgrade keeps the deployed storage: every member of the ERC-7201 `Layout` struct, and of each
// struct, mapping and array under it, sits at the same slot and offset with the same type in the
// new contracts as in the deployed version (test/contract/fixtures/v1/, main's contracts as
// deployed). New state may only be appended: to `Layout`, or to a struct that lives in a mapping,
// where each entry has slots of its own. solc reports layouts for state variables only, and
// AccountConfig keeps none (its state is namespaced), so a probe contract declares one `Layout`
// variable and solc lays out the whole tree under it.
import solc from "solc";
import { describe, expect, it } from "vitest";
import { findImport } from "../../contracts/compile.ts";

type StorageType = {
  encoding: "inplace" | "mapping" | "dynamic_array" | "bytes";
  label: string;
  numberOfBytes: string;
  members?: { label: string; slot: string; offset: number; type: string }[];
  key?: string;
  value?: string;
  base?: string;
};
type StorageLayout = {
  storage: { label: string; slot: string; offset: number; type: string }[];
  types: Record<string, StorageType>;
};

/** solc's storage layout of `Layout` as declared in the AccountConfigStorage.sol at `storagePath`. */
function layoutOf(storagePath: string, edit: (source: string) => string = (s) => s): StorageLayout {
  const storage = findImport(storagePath);
  if (!("contents" in storage)) throw new Error(storage.error);
  const sources = {
    [storagePath]: { content: edit(storage.contents) },
    "LayoutProbe.sol": {
      content: `pragma solidity 0.8.37;\nimport {AccountConfigStorage} from "${storagePath}";\ncontract LayoutProbe is AccountConfigStorage { Layout internal probe; }\n`,
    },
  };
  const input = {
    language: "Solidity",
    sources,
    settings: { evmVersion: "cancun", outputSelection: { "LayoutProbe.sol": { LayoutProbe: ["storageLayout"] } } },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<string, Record<string, { storageLayout: StorageLayout }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  return output.contracts!["LayoutProbe.sol"]!.LayoutProbe!.storageLayout;
}

/**
 * Where `next` breaks `deployed`: a member moved, retyped or gone; a type that changed size where
 * growing would shift what follows it. Type ids carry AST ids, which differ between compilations,
 * so types are compared by their shape and label.
 */
function layoutProblems(deployed: StorageLayout, next: StorageLayout): string[] {
  const problems: string[] = [];
  const compare = (a: string, b: string, path: string, mayGrow: boolean) => {
    const x = deployed.types[a]!;
    const y = next.types[b]!;
    if (x.label !== y.label || x.encoding !== y.encoding) {
      problems.push(`${path}: ${x.label} became ${y.label}`);
      return;
    }
    if (x.members) {
      x.members.forEach((m, i) => {
        const n = y.members?.[i];
        if (!n || n.label !== m.label || n.slot !== m.slot || n.offset !== m.offset) {
          problems.push(
            `${path}.${m.label}: slot ${m.slot}+${m.offset} is now ${n ? `${n.label} at ${n.slot}+${n.offset}` : "gone"}`,
          );
        } else {
          compare(m.type, n.type, `${path}.${m.label}`, false);
        }
      });
    }
    if (
      x.numberOfBytes !== y.numberOfBytes &&
      !(mayGrow && x.members && Number(y.numberOfBytes) > Number(x.numberOfBytes))
    ) {
      problems.push(`${path}: ${x.numberOfBytes} bytes became ${y.numberOfBytes}`);
    }
    if (x.key && y.key) compare(x.key, y.key, `${path}[key]`, false);
    // A mapping's value has slots of its own per key: a struct there may grow at its end.
    if (x.value && y.value) compare(x.value, y.value, `${path}[value]`, true);
    if (x.base && y.base) compare(x.base, y.base, `${path}[]`, false);
  };
  const root = (l: StorageLayout) => l.storage.find((v) => v.label === "probe")!.type;
  // The namespaced root struct may grow: nothing follows it.
  compare(root(deployed), root(next), "Layout", true);
  return problems;
}

const DEPLOYED = "test/contract/fixtures/v1/AccountConfigStorage.sol";
const CURRENT = "contracts/AccountConfigStorage.sol";

describe("storage layout against the deployed version", () => {
  it("moves, retypes or shrinks nothing; only appends", () => {
    expect(layoutProblems(layoutOf(DEPLOYED), layoutOf(CURRENT))).toEqual([]);
  });

  it("appends the alias namespace as the last member of Layout", () => {
    const members = (l: StorageLayout) => l.types[l.storage[0]!.type]!.members!.map((m) => `${m.label}@${m.slot}`);
    expect(members(layoutOf(CURRENT))).toEqual([...members(layoutOf(DEPLOYED)), "aliases@7"]);
  });

  it("appends the guardrail's hash and block as the last members of Wallet, which lives in a mapping", () => {
    const walletMembers = (l: StorageLayout) => {
      const wallet = Object.values(l.types).find((t) => t.label === "struct AccountConfigStorage.Wallet")!;
      return wallet.members!.map((m) => `${m.label}@${m.slot}`);
    };
    expect(walletMembers(layoutOf(CURRENT))).toEqual([
      ...walletMembers(layoutOf(DEPLOYED)),
      "guardrail@5",
      "guardrailBlock@6",
    ]);
  });

  // The check itself must be able to fail.
  it("reports a member inserted before others, a retyped member and a grown struct inside another", () => {
    const inserted = layoutOf(CURRENT, (s) =>
      s.replace(
        "mapping(uint256 => Account) accounts;",
        "uint256 inserted;\n        mapping(uint256 => Account) accounts;",
      ),
    );
    expect(layoutProblems(layoutOf(DEPLOYED), inserted)).toContain("Layout.accounts: slot 1+0 is now inserted at 1+0");
    const retyped = layoutOf(CURRENT, (s) => s.replace("uint256 nextGroupId;", "uint128 nextGroupId;"));
    expect(layoutProblems(layoutOf(DEPLOYED), retyped).join("\n")).toMatch(/nextGroupId: uint256 became uint128/);
    // Group sits inside a mapping, but its EnumerableSet members are structs in place: growing one moves `wallets`.
    const grown = layoutOf(CURRENT, (s) =>
      s.replace(
        "EnumerableSet.UintSet cids; // 0 = any action",
        "EnumerableSet.UintSet cids; uint256 extra; // 0 = any action",
      ),
    );
    expect(layoutProblems(layoutOf(DEPLOYED), grown).join("\n")).toMatch(
      /Layout\.accounts\[value\]\.groups\[value\]\.wallets: slot/,
    );
  });
});
