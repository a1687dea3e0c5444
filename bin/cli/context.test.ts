// What every command shares: where the URL and the key come from (first found wins: flags,
// environment, profile, the running stack's local.json, the default), the profile file (0600,
// other profiles kept), tables and error lines.
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BaseError, ContractFunctionExecutionError, ContractFunctionRevertedError, encodeErrorResult } from "viem";
import { accountConfigAbi } from "../../shared/generated/accountConfigAbi.ts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SigilError } from "../../sdk/src/index.ts";
import {
  CliError,
  DEFAULT_API_URL,
  errorLine,
  fields,
  LOCAL_STACK,
  loadService,
  maskKey,
  readProfiles,
  resolveConnection,
  table,
  UsageError,
  writeProfile,
} from "./context.ts";

let dir: string;
let profileFile: string;
const KEY_FLAG = "flag-key";
const KEY_ENV = "env-key";
const KEY_PROFILE = "profile-key";

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sigil-cli-context-"));
  profileFile = join(dir, "config", "profiles.json");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A stack state folder whose local.json names `edgeUrl`. */
function stackState(folder: string, edgeUrl: string): string {
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, "local.json"), JSON.stringify({ rpcUrl: "http://127.0.0.1:1", edgeUrl }));
  return folder;
}

describe("resolveConnection: first found wins", () => {
  it("takes the flags over everything", () => {
    writeProfile(profileFile, "default", { api: "http://profile:1", key: KEY_PROFILE });
    const c = resolveConnection({
      flags: { api: "http://flag:1/core/v1", key: KEY_FLAG },
      env: {
        SIGIL_API_URL: "http://env:1",
        SIGIL_API_KEY: KEY_ENV,
        SIGIL_PROFILE_FILE: profileFile,
        SIGIL_STATE_DIR: stackState(join(dir, "state"), "http://local:1"),
      },
      cwd: dir,
    });
    expect(c).toMatchObject({
      baseUrl: "http://flag:1",
      apiKey: KEY_FLAG,
      from: { api: { kind: "flag" }, key: { kind: "flag" } },
    });
  });

  it("then the environment, then the profile, each value on its own", () => {
    writeProfile(profileFile, "default", { api: "http://profile:1", key: KEY_PROFILE });
    const env = { SIGIL_PROFILE_FILE: profileFile, SIGIL_STATE_DIR: stackState(join(dir, "state"), "http://local:1") };
    expect(
      resolveConnection({
        flags: {},
        env: { ...env, SIGIL_API_URL: "http://env:1", SIGIL_API_KEY: KEY_ENV },
        cwd: dir,
      }),
    ).toMatchObject({ baseUrl: "http://env:1", apiKey: KEY_ENV });
    const mixed = resolveConnection({
      flags: { key: KEY_FLAG },
      env: { ...env, SIGIL_API_URL: "http://env:1" },
      cwd: dir,
    });
    expect(mixed).toMatchObject({ baseUrl: "http://env:1", apiKey: KEY_FLAG });
    const profile = resolveConnection({ flags: {}, env, cwd: dir });
    expect(profile).toMatchObject({
      baseUrl: "http://profile:1",
      apiKey: KEY_PROFILE,
      from: { api: { kind: "profile" }, key: { kind: "profile" } },
    });
  });

  it("then, for the URL, the running stack's local.json (SIGIL_STATE_DIR), then the default", () => {
    const env = { SIGIL_PROFILE_FILE: profileFile };
    const state = stackState(join(dir, "state"), "http://127.0.0.1:4242");
    expect(resolveConnection({ flags: {}, env: { ...env, SIGIL_STATE_DIR: state }, cwd: dir })).toMatchObject({
      baseUrl: "http://127.0.0.1:4242",
      apiKey: undefined,
      from: { api: { kind: "local" } },
    });
    // A profile with a key and no URL leaves the URL to local.json.
    writeProfile(profileFile, "default", { key: KEY_PROFILE });
    expect(resolveConnection({ flags: {}, env: { ...env, SIGIL_STATE_DIR: state }, cwd: dir })).toMatchObject({
      baseUrl: "http://127.0.0.1:4242",
      apiKey: KEY_PROFILE,
    });
    expect(
      resolveConnection({ flags: {}, env: { ...env, SIGIL_STATE_DIR: join(dir, "none") }, cwd: dir }),
    ).toMatchObject({ baseUrl: DEFAULT_API_URL, from: { api: { kind: "default" } } });
  });

  it("finds .sigil/local.json in the current folder or the nearest one above it", () => {
    stackState(join(dir, "project", ".sigil"), "http://127.0.0.1:5151");
    const deep = join(dir, "project", "src", "deep");
    mkdirSync(deep, { recursive: true });
    expect(resolveConnection({ flags: {}, env: { SIGIL_PROFILE_FILE: profileFile }, cwd: deep }).baseUrl).toBe(
      "http://127.0.0.1:5151",
    );
    expect(
      resolveConnection({ flags: {}, env: { SIGIL_PROFILE_FILE: profileFile }, cwd: join(dir, "project") }).baseUrl,
    ).toBe("http://127.0.0.1:5151");
  });

  it("reads the profile --profile (or SIGIL_PROFILE) names, and refuses one that does not exist", () => {
    writeProfile(profileFile, "default", { api: "http://default:1", key: "k-default" });
    writeProfile(profileFile, "staging", { api: "http://staging:1", key: "k-staging" });
    const env = { SIGIL_PROFILE_FILE: profileFile };
    expect(resolveConnection({ flags: { profile: "staging" }, env, cwd: dir })).toMatchObject({
      baseUrl: "http://staging:1",
      apiKey: "k-staging",
      profileName: "staging",
    });
    expect(resolveConnection({ flags: {}, env: { ...env, SIGIL_PROFILE: "staging" }, cwd: dir }).apiKey).toBe(
      "k-staging",
    );
    expect(() => resolveConnection({ flags: { profile: "prod" }, env, cwd: dir })).toThrow(UsageError);
    // Unless the command is about to write it (account create --save --profile prod).
    expect(resolveConnection({ flags: { profile: "prod" }, env, cwd: dir, newProfile: true })).toMatchObject({
      profileName: "prod",
      apiKey: undefined,
    });
    // The default profile may be absent.
    rmSync(profileFile);
    expect(resolveConnection({ flags: {}, env, cwd: join(dir, "nowhere") })).toMatchObject({
      baseUrl: DEFAULT_API_URL,
      apiKey: undefined,
    });
  });

  it("refuses a URL that is not http(s)", () => {
    expect(() =>
      resolveConnection({ flags: { api: "127.0.0.1:8787" }, env: { SIGIL_PROFILE_FILE: profileFile }, cwd: dir }),
    ).toThrow(/not an http\(s\) URL/);
  });

  it("a profile for the local stack follows its local.json when it restarts on another port, and refuses when none is found", () => {
    writeProfile(profileFile, "default", { api: LOCAL_STACK, key: KEY_PROFILE });
    const state = join(dir, "state");
    const env = { SIGIL_PROFILE_FILE: profileFile, SIGIL_STATE_DIR: stackState(state, "http://127.0.0.1:8787") };
    expect(resolveConnection({ flags: {}, env, cwd: dir })).toMatchObject({
      baseUrl: "http://127.0.0.1:8787",
      apiKey: KEY_PROFILE,
      from: { api: { kind: "local" }, key: { kind: "profile" } },
    });
    stackState(state, "http://127.0.0.1:9123");
    expect(resolveConnection({ flags: {}, env, cwd: dir }).baseUrl).toBe("http://127.0.0.1:9123");
    rmSync(state, { recursive: true });
    expect(() => resolveConnection({ flags: {}, env, cwd: dir })).toThrow(
      /profile "default" is for the local stack, and no \.sigil\/local\.json is found from here/,
    );
  });
});

describe("the profile file", () => {
  it("is written readable by its owner only, keeping the other profiles and the values not given", () => {
    writeProfile(profileFile, "default", { api: "http://a:1", key: "k1" });
    writeProfile(profileFile, "other", { api: "http://b:1" });
    writeProfile(profileFile, "default", { key: "k2" });
    expect(statSync(profileFile).mode & 0o777).toBe(0o600);
    expect(readProfiles(profileFile).profiles).toEqual({
      default: { api: "http://a:1", key: "k2" },
      other: { api: "http://b:1" },
    });
  });

  it("that is not a profile file is an error, not an empty one", () => {
    mkdirSync(join(dir, "config"), { recursive: true });
    writeFileSync(profileFile, "not json");
    expect(() => readProfiles(profileFile)).toThrow(CliError);
    writeFileSync(profileFile, JSON.stringify({ profiles: { default: { key: 1 } } }));
    expect(() => readProfiles(profileFile)).toThrow(/string "api" and "key"/);
  });

  it("shows keys masked: four characters, never the rest", () => {
    const key = "9gd2SfmEzV20pnep/oA3C73Ijf100xCXVMeBLI1sHsE=";
    expect(maskKey(key)).toBe("9gd2… (44 characters)");
    expect(maskKey(key)).not.toContain(key.slice(4, 8));
  });
});

describe("output", () => {
  it("aligns table columns to their widest cell, two spaces apart, with no trailing blanks", () => {
    expect(
      table(
        ["ID", "NAME", "DESCRIPTION"],
        [
          ["0", "master", ""],
          ["12", "a longer name", "x"],
        ],
      ),
    ).toBe(["ID  NAME           DESCRIPTION", "0   master", "12  a longer name  x"].join("\n"));
    expect(table(["A", "B"], [])).toBe("A  B");
  });

  it("aligns name–value lines and leaves out empty values", () => {
    expect(
      fields([
        ["wallet", "0xab"],
        ["id", 3],
        ["request", undefined],
        ["transaction", "0xcd"],
      ]),
    ).toBe(["wallet       0xab", "id           3", "transaction  0xcd"].join("\n"));
  });

  it("gives every error as one line: the service's code, message and request id", async () => {
    // As runCommand does before a command runs: the SDK's and viem's errors are known once they are loaded.
    await loadService();
    expect(
      errorLine(
        new SigilError({ code: "invalid_api_key", message: "the API key is not valid", status: 401, requestId: "r-1" }),
      ),
    ).toBe("invalid_api_key: the API key is not valid (request r-1)");
    expect(errorLine(new CliError("file_unreadable", "cannot read x"))).toBe("file_unreadable: cannot read x");
    expect(errorLine(new BaseError("execution reverted", { details: "line one\nline two" }))).toBe(
      "chain_error: execution reverted",
    );
    expect(errorLine(new Error("two\nlines"))).toBe("error: two lines");
  });

  it("names the contract's custom error of a revert", async () => {
    await loadService();
    const hash = 2n ** 200n + 5n;
    const data = encodeErrorResult({ abi: accountConfigAbi, errorName: "AccountDoesNotExist", args: [hash] });
    const reverted = new ContractFunctionRevertedError({ abi: accountConfigAbi, data, functionName: "setUsageApiKey" });
    const err = new ContractFunctionExecutionError(reverted, {
      abi: accountConfigAbi,
      functionName: "setUsageApiKey",
      args: [],
    });
    expect(errorLine(err)).toBe(
      `chain_error: The contract function "setUsageApiKey" reverted: AccountDoesNotExist(0x${hash.toString(16).padStart(64, "0")})`,
    );
  });
});
