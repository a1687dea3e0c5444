// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {EnumerableSet} from "@openzeppelin/contracts/utils/structs/EnumerableSet.sol";

/// @title AccountConfigStorage — the state, errors and shared helpers of AccountConfig.
/// @dev Inherited by `AccountConfig` (writes, access rule, execution authorization) and by
/// `AccountConfigViews` (paged reads, reached by delegatecall), so both see one layout. State lives
/// in ERC-7201 namespaced storage; a later version may only append to these structs.
abstract contract AccountConfigStorage {
    using EnumerableSet for EnumerableSet.UintSet;
    using EnumerableSet for EnumerableSet.AddressSet;

    // ─── limits ────────────────────────────────────────────────────────────────────────────
    uint256 internal constant MAX_GROUP_CIDS = 64;
    uint256 internal constant MAX_GROUP_WALLETS = 64;
    uint256 internal constant MAX_KEY_GROUP_IDS = 64;
    uint256 internal constant MAX_NAME_BYTES = 128;
    uint256 internal constant MAX_DESCRIPTION_BYTES = 1024;
    uint256 internal constant MAX_CID_BYTES = 128;
    uint256 internal constant MAX_PAGE_SIZE = 100;
    uint256 internal constant MAX_PAYERS = 256;
    uint256 internal constant MAX_GUARDRAIL_BYTES = 16384;

    // ─── errors ────────────────────────────────────────────────────────────────────────────
    error NoAccountAccess(uint256 hash, address sender);
    error NotAllowed(string scope, uint256 groupId);
    error NotOwner();
    error AccountDoesNotExist(uint256 hash);
    error AccountAlreadyExists(uint256 hash);
    error GroupDoesNotExist(uint256 id);
    error ActionDoesNotExist(uint256 cidHash);
    error WalletNotRegistered(address wallet);
    error WalletAlreadyRegistered(address wallet);
    error InvalidRequest(string reason);
    error KeyExpired(uint256 hash);
    error LimitExceeded(string what, uint256 max);

    // ─── state ─────────────────────────────────────────────────────────────────────────────

    /// What a hash in the key namespace (`Layout.hashes`) is. `RemovedUsageKey` no longer resolves
    /// but keeps its account, so a key hash that once belonged to an account never moves to another.
    /// `Alias` is written by version 1 only, which kept wallet aliases in the same mapping; version 2
    /// keeps them in `Layout.aliases` and reads these old entries as aliases, never as keys.
    enum HashKind {
        None,
        Master,
        UsageKey,
        Alias,
        RemovedUsageKey
    }

    struct HashEntry {
        uint256 master;
        HashKind kind;
    }

    struct UsageKey {
        uint256 expiration; // unix seconds; 0 = never; live while block.timestamp < expiration
        uint256 balance; // spend cap in cents, enforced off chain by the ledger; 0 = none
        string name;
        string description;
        bool canCreateGroups;
        bool canDeleteGroups;
        bool canCreatePkps;
        uint256[] manageIpfsIdsInGroups;
        uint256[] addPkpToGroups;
        uint256[] removePkpFromGroups;
        uint256[] executeInGroups;
        // Appended in version 2 (a struct in a mapping may grow at its end): the key's guardrail,
        // which narrows what every run of the key may sign, as a wallet's does (docs/design/guardrails.md).
        bytes32 guardrail;
        uint256 guardrailBlock;
    }

    struct Group {
        string name;
        string description;
        EnumerableSet.UintSet cids; // 0 = any action
        EnumerableSet.AddressSet wallets; // address(0) = any wallet registered to the account
    }

    struct Action {
        string cid;
        string name;
        string description;
    }

    struct Wallet {
        uint256 master; // 0 = not registered
        uint256 derivation;
        uint256 id;
        string name;
        string description;
        // ─── version 2 (append only: a Wallet lives in a mapping, so each has slots of its own) ───
        bytes32 guardrail; // keccak256 of the guardrail document's bytes; 0 = none
        uint256 guardrailBlock; // the block whose WalletGuardrailSet event holds the document
    }

    struct Account {
        address admin; // address(0) = no such account
        bool managed;
        uint256 nextGroupId; // group ids are never reused, so a stale group id in a key grants nothing
        string name;
        string description;
        address[] wallets; // index = wallet id
        EnumerableSet.UintSet groupIds;
        mapping(uint256 => Group) groups;
        EnumerableSet.UintSet usageKeyHashes;
        mapping(uint256 => UsageKey) usageKeys;
        EnumerableSet.UintSet actionHashes;
        mapping(uint256 => Action) actions;
    }

    /// Two namespaces that cannot collide: `hashes` holds API-key hashes (managed accounts' masters,
    /// usage keys), whose values callers choose; `aliases` holds wallet lookup hashes
    /// `keccak256(abi.encodePacked(wallet))` (admins, AMWs of managed accounts, and the master of a
    /// wallet-created account), written only for a wallet that is becoming an admin or an AMW. A
    /// usage key registered as some wallet's lookup hash therefore names nothing in `aliases`.
    /// @custom:storage-location erc7201:sigil.storage.AccountConfig
    struct Layout {
        mapping(uint256 => HashEntry) hashes;
        mapping(uint256 => Account) accounts; // by master hash
        mapping(address => Wallet) wallets;
        mapping(address => bool) everAdmin;
        EnumerableSet.AddressSet payers;
        address adminPayer;
        // ─── version 2 (append only) ───
        mapping(uint256 => uint256) aliases; // wallet lookup hash → master; 0 = none
    }

    // keccak256(abi.encode(uint256(keccak256("sigil.storage.AccountConfig")) - 1)) & ~bytes32(uint256(0xff))
    bytes32 private constant LAYOUT_SLOT = 0x23b633858b6c0a5c56e0420c6b02045106246e095bb62a972984f38a59f25100;

    function _layout() internal pure returns (Layout storage l) {
        bytes32 slot = LAYOUT_SLOT;
        assembly ("memory-safe") {
            l.slot := slot
        }
    }

    // ─── helpers used by both sides ────────────────────────────────────────────────────────

    /// The account a wallet lookup hash names in the alias namespace, or 0. Version 1 kept aliases
    /// and wallet-created masters in `hashes` (as `Alias` and `Master`); those entries still count.
    /// Reading a managed account's master as an alias of itself is harmless: no wallet's lookup
    /// hash is a random key's hash.
    function _aliasOf(uint256 hash) internal view returns (uint256 master) {
        Layout storage l = _layout();
        master = l.aliases[hash];
        if (master == 0) {
            HashEntry storage e = l.hashes[hash];
            if (e.kind == HashKind.Alias || e.kind == HashKind.Master) master = e.master;
        }
    }

    /// The account any hash names for its admin and for readers: a wallet lookup hash first (so a
    /// usage key squatting on a wallet's lookup hash never shadows that wallet's account), else a
    /// master or usage key. 0 when nothing resolves (unknown, removed).
    function _accountOf(uint256 hash) internal view returns (uint256 master) {
        master = _aliasOf(hash);
        if (master == 0) {
            HashEntry storage e = _layout().hashes[hash];
            if (e.kind == HashKind.UsageKey) master = e.master;
        }
    }

    /// The account a hash resolves to for reading: master, live or expired usage key, or alias.
    /// An expired usage key reverts `KeyExpired`; an unknown or removed hash `AccountDoesNotExist`.
    function _readable(uint256 hash) internal view returns (uint256 master, Account storage a) {
        master = _accountOf(hash);
        if (master == 0) revert AccountDoesNotExist(hash);
        a = _layout().accounts[master];
        // Only the account that holds `hash` as a usage key has a record under it.
        if (_expired(a.usageKeys[hash])) revert KeyExpired(hash);
    }

    function _group(Account storage a, uint256 groupId) internal view returns (Group storage) {
        if (!a.groupIds.contains(groupId)) revert GroupDoesNotExist(groupId);
        return a.groups[groupId];
    }

    function _expired(UsageKey storage k) internal view returns (bool) {
        return k.expiration != 0 && k.expiration <= block.timestamp;
    }

    function _contains(uint256[] storage ids, uint256 value) internal view returns (bool) {
        for (uint256 i; i < ids.length; ++i) {
            if (ids[i] == value) return true;
        }
        return false;
    }
}
