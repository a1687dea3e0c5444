import { describe, expect, it } from "vitest";
import { accountConfigAbi } from "./generated/accountConfigAbi.ts";
import {
  camelOf,
  fromContract,
  noPermissions,
  PERMISSION_FLAGS,
  PERMISSION_LISTS,
  permissionArgs,
  permissionsOf,
  toContract,
} from "./permissions.ts";

const setUsageApiKey = accountConfigAbi.find((f) => f.type === "function" && f.name === "setUsageApiKey");
const permissionInputs = (setUsageApiKey?.inputs ?? []).slice(6).map((i) => i.name);

describe("a usage key's permissions", () => {
  it("are named as setUsageApiKey names its arguments, in its order, the camelCase of the API's names", () => {
    expect(permissionInputs).toEqual([...PERMISSION_FLAGS, ...PERMISSION_LISTS].map(camelOf));
  });

  it("go to the contract in that order", () => {
    const p = { ...noPermissions<number>(), can_delete_groups: true, add_pkp_to_groups: [2], execute_in_groups: [4] };
    expect(permissionArgs(p)).toEqual([false, true, false, [], [2], [], [4]]);
  });

  it("cross between the API's spelling and the contract's and back, group ids mapped", () => {
    const p = {
      can_create_groups: true,
      can_delete_groups: false,
      can_create_pkps: true,
      manage_ipfs_ids_in_groups: ["1"],
      add_pkp_to_groups: [],
      remove_pkp_from_groups: ["0"],
      execute_in_groups: ["2", "3"],
    };
    const onChain = toContract(p, (g) => BigInt(g));
    expect(onChain).toEqual({
      canCreateGroups: true,
      canDeleteGroups: false,
      canCreatePkps: true,
      manageIpfsIdsInGroups: [1n],
      addPkpToGroups: [],
      removePkpFromGroups: [0n],
      executeInGroups: [2n, 3n],
    });
    expect(fromContract(onChain, (g) => g.toString())).toEqual(p);
  });

  it("are taken alone from anything that carries them", () => {
    const key = { id: "0x01", name: "k", ...noPermissions(), execute_in_groups: ["7"] };
    expect(permissionsOf(key, (g) => g)).toEqual({ ...noPermissions(), execute_in_groups: ["7"] });
  });
});
