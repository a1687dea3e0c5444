// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {EnumerableSet} from "@openzeppelin/contracts/utils/structs/EnumerableSet.sol";
import {AccountConfigStorage} from "./AccountConfigStorage.sol";

/// @title AccountConfigViews — AccountConfig's paged read views.
/// @notice Never called at its own address: AccountConfig's fallback delegatecalls it, so these
/// functions read the proxy's storage and appear in AccountConfig's ABI. They live apart from the
/// writes only to keep each contract under the 24 KiB code-size limit. Nothing here writes state.
/// @dev Every paged view takes any hash that resolves to the account (master, usage key, alias;
/// a wallet lookup hash first): the edge passes the caller's key hash and gets the list in one
/// call. `billingOf` and `usageKeyExpiration` read API-key hashes only, `accountOfWallet` wallets
/// only, so neither can be pointed at the other kind. An expired usage key reverts
/// `KeyExpired`; an unknown or removed one `AccountDoesNotExist`. Pages are 0-based, sizes 1..100,
/// and each list returns the total count beside the page. Lists are in insertion order until an
/// item is removed: sets remove by moving their last item into the gap, so clients must not read
/// meaning into positions (wallets are never removed, so wallet ids and order are stable).
contract AccountConfigViews is AccountConfigStorage {
    using EnumerableSet for EnumerableSet.UintSet;
    using EnumerableSet for EnumerableSet.AddressSet;

    /// @notice Item id reported by `listWalletsInGroup` for the `address(0)` entry ("any wallet of
    /// the account"), so it cannot be mistaken for wallet 0, the Account Master Wallet.
    uint256 public constant ANY_WALLET_ID = type(uint256).max;

    struct AccountView {
        uint256 master;
        address admin;
        bool managed;
        string name;
        string description;
        uint256 walletCount;
        uint256 groupCount;
        uint256 usageKeyCount;
        uint256 actionCount;
    }

    struct UsageKeyView {
        uint256 keyHash;
        uint256 expiration;
        uint256 balance;
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

    struct WalletView {
        uint256 id;
        address wallet;
        string name;
        string description;
    }

    struct GroupView {
        uint256 id;
        string name;
        string description;
        uint256[] cidHashes;
        address[] wallets;
    }

    struct ActionView {
        uint256 cidHash;
        string cid; // empty when the action is in a group but was never registered with addAction
        string name;
        string description;
    }

    function getAccount(uint256 hash) external view returns (AccountView memory) {
        (uint256 master, Account storage a) = _readable(hash);
        return AccountView(
            master,
            a.admin,
            a.managed,
            a.name,
            a.description,
            a.wallets.length,
            a.groupIds.length(),
            a.usageKeyHashes.length(),
            a.actionHashes.length()
        );
    }

    function listUsageApiKeys(uint256 hash, uint256 page, uint256 size)
        external
        view
        returns (UsageKeyView[] memory items, uint256 total)
    {
        (, Account storage a) = _readable(hash);
        total = a.usageKeyHashes.length();
        (uint256 start, uint256 end) = _page(total, page, size);
        items = new UsageKeyView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            uint256 keyHash = a.usageKeyHashes.at(i);
            UsageKey storage k = a.usageKeys[keyHash];
            items[i - start] = UsageKeyView(
                keyHash,
                k.expiration,
                k.balance,
                k.name,
                k.description,
                k.canCreateGroups,
                k.canDeleteGroups,
                k.canCreatePkps,
                k.manageIpfsIdsInGroups,
                k.addPkpToGroups,
                k.removePkpFromGroups,
                k.executeInGroups
            );
        }
    }

    function listWallets(uint256 hash, uint256 page, uint256 size)
        external
        view
        returns (WalletView[] memory items, uint256 total)
    {
        (, Account storage a) = _readable(hash);
        total = a.wallets.length;
        (uint256 start, uint256 end) = _page(total, page, size);
        items = new WalletView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            items[i - start] = _walletView(a.wallets[i]);
        }
    }

    function listWalletsInGroup(uint256 hash, uint256 groupId, uint256 page, uint256 size)
        external
        view
        returns (WalletView[] memory items, uint256 total)
    {
        (, Account storage a) = _readable(hash);
        Group storage g = _group(a, groupId);
        total = g.wallets.length();
        (uint256 start, uint256 end) = _page(total, page, size);
        items = new WalletView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            address w = g.wallets.at(i);
            items[i - start] = w == address(0) ? WalletView(ANY_WALLET_ID, address(0), "", "") : _walletView(w);
        }
    }

    function listGroups(uint256 hash, uint256 page, uint256 size)
        external
        view
        returns (GroupView[] memory items, uint256 total)
    {
        (, Account storage a) = _readable(hash);
        total = a.groupIds.length();
        (uint256 start, uint256 end) = _page(total, page, size);
        items = new GroupView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            items[i - start] = _groupView(a, a.groupIds.at(i));
        }
    }

    function getGroup(uint256 hash, uint256 groupId) external view returns (GroupView memory) {
        (, Account storage a) = _readable(hash);
        _group(a, groupId);
        return _groupView(a, groupId);
    }

    function listActions(uint256 hash, uint256 page, uint256 size)
        external
        view
        returns (ActionView[] memory items, uint256 total)
    {
        (, Account storage a) = _readable(hash);
        total = a.actionHashes.length();
        (uint256 start, uint256 end) = _page(total, page, size);
        items = new ActionView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            items[i - start] = _actionView(a, a.actionHashes.at(i));
        }
    }

    function listActionsInGroup(uint256 hash, uint256 groupId, uint256 page, uint256 size)
        external
        view
        returns (ActionView[] memory items, uint256 total)
    {
        (, Account storage a) = _readable(hash);
        Group storage g = _group(a, groupId);
        total = g.cids.length();
        (uint256 start, uint256 end) = _page(total, page, size);
        items = new ActionView[](end - start);
        for (uint256 i = start; i < end; ++i) {
            items[i - start] = _actionView(a, g.cids.at(i));
        }
    }

    /// @notice The wallet's derivation if it is registered to the account `hash` resolves to, else 0.
    function getWalletDerivation(uint256 hash, address wallet) external view returns (uint256) {
        (uint256 master,) = _readable(hash);
        Wallet storage w = _layout().wallets[wallet];
        return w.master == master ? w.derivation : 0;
    }

    /// @notice The wallet's guardrail if it is registered to the account `hash` resolves to: the
    /// keccak256 of the document's bytes and the block whose `WalletGuardrailSet` event holds the
    /// document; (0, 0) when it has none or is not the account's.
    function getWalletGuardrail(uint256 hash, address wallet)
        external
        view
        returns (bytes32 guardrailHash, uint256 blockNumber)
    {
        (uint256 master,) = _readable(hash);
        Wallet storage w = _layout().wallets[wallet];
        if (w.master != master) return (0, 0);
        return (w.guardrail, w.guardrailBlock);
    }

    /// @notice When a usage key stops authorizing (Unix seconds; 0 = never, or not a usage key).
    /// The enclave caps how long it caches a key's grants by this, so an expired key stops at once.
    function usageKeyExpiration(uint256 keyHash) external view returns (uint256) {
        HashEntry storage e = _layout().hashes[keyHash];
        if (e.kind != HashKind.UsageKey) return 0;
        return _layout().accounts[e.master].usageKeys[keyHash].expiration;
    }

    /// @notice A usage key's guardrail (keccak256 of the document's bytes, and the block whose
    /// `UsageKeyGuardrailSet` event holds it); (0, 0) for none, or for a hash that is not a live
    /// usage key's. Ungated, as `usageKeyExpiration`: the enclave asks it with the key's hash alone.
    function usageKeyGuardrail(uint256 keyHash) external view returns (bytes32 guardrailHash, uint256 blockNumber) {
        HashEntry storage e = _layout().hashes[keyHash];
        if (e.kind != HashKind.UsageKey) return (0, 0);
        UsageKey storage k = _layout().accounts[e.master].usageKeys[keyHash];
        return (k.guardrail, k.guardrailBlock);
    }

    /// @notice What the ledger needs to bill a request made with the API key `keyHash` (key
    /// namespace only): the account's master hash (its ledger), whether the key is live (as in
    /// `resolveKey`), and the key's spend cap in cents (0 = none, and always 0 for a master key).
    function billingOf(uint256 keyHash) external view returns (uint256 master, bool live, uint256 spendLimitCents) {
        HashEntry storage e = _layout().hashes[keyHash];
        if (e.kind != HashKind.Master && e.kind != HashKind.UsageKey) return (0, false, 0);
        master = e.master;
        Account storage a = _layout().accounts[master];
        if (e.kind == HashKind.Master) return (master, a.managed, 0);
        UsageKey storage k = a.usageKeys[keyHash];
        return (master, !_expired(k), k.balance);
    }

    /// @notice The account whose admin `wallet` is or was (its lookup hash, in the alias namespace
    /// only), with that account's current admin and mode; master 0 when there is none. What the
    /// signature flows and `X-Wallet-Auth` resolve: a usage key registered as the wallet's lookup
    /// hash is never mistaken for it.
    function accountOfWallet(address wallet) external view returns (uint256 master, address admin, bool managed) {
        master = _aliasOf(uint256(keccak256(abi.encodePacked(wallet))));
        Account storage a = _layout().accounts[master];
        return (master, a.admin, a.managed);
    }

    function _page(uint256 total, uint256 page, uint256 size) private pure returns (uint256 start, uint256 end) {
        if (size == 0 || size > MAX_PAGE_SIZE) revert InvalidRequest("page size must be 1 to 100");
        // Checking page < total first keeps page * size from overflowing.
        start = page < total && page * size < total ? page * size : total;
        end = total - start > size ? start + size : total;
    }

    function _walletView(address wallet) private view returns (WalletView memory) {
        Wallet storage w = _layout().wallets[wallet];
        return WalletView(w.id, wallet, w.name, w.description);
    }

    function _groupView(Account storage a, uint256 groupId) private view returns (GroupView memory) {
        Group storage g = a.groups[groupId];
        return GroupView(groupId, g.name, g.description, g.cids.values(), g.wallets.values());
    }

    function _actionView(Account storage a, uint256 cidHash) private view returns (ActionView memory) {
        Action storage act = a.actions[cidHash];
        return ActionView(cidHash, act.cid, act.name, act.description);
    }
}
