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

    /// What a hash in the shared key/alias space is. `RemovedUsageKey` no longer resolves but
    /// keeps its account, so a hash that once belonged to an account never moves to another.
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

    /// @custom:storage-location erc7201:sigil.storage.AccountConfig
    struct Layout {
        mapping(uint256 => HashEntry) hashes;
        mapping(uint256 => Account) accounts; // by master hash
        mapping(address => Wallet) wallets;
        mapping(address => bool) everAdmin;
        EnumerableSet.AddressSet payers;
        address adminPayer;
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

    /// The account a hash resolves to for reading: master, live or expired usage key, or alias.
    /// An expired usage key reverts `KeyExpired`; an unknown or removed hash `AccountDoesNotExist`.
    function _readable(uint256 hash) internal view returns (uint256 master, Account storage a) {
        Layout storage l = _layout();
        HashEntry storage e = l.hashes[hash];
        if (e.kind == HashKind.None || e.kind == HashKind.RemovedUsageKey) revert AccountDoesNotExist(hash);
        master = e.master;
        a = l.accounts[master];
        if (e.kind == HashKind.UsageKey && _expired(a.usageKeys[hash])) revert KeyExpired(hash);
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
