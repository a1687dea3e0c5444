// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {Initializable} from "@openzeppelin/contracts-upgradeable/proxy/utils/Initializable.sol";
import {Ownable2StepUpgradeable} from "@openzeppelin/contracts-upgradeable/access/Ownable2StepUpgradeable.sol";
import {UUPSUpgradeable} from "@openzeppelin/contracts/proxy/utils/UUPSUpgradeable.sol";
import {MulticallUpgradeable} from "@openzeppelin/contracts-upgradeable/utils/MulticallUpgradeable.sol";
import {EnumerableSet} from "@openzeppelin/contracts/utils/structs/EnumerableSet.sol";
import {AccountConfigStorage} from "./AccountConfigStorage.sol";

/// @title AccountConfig — Sigil's on-chain registry of accounts, usage keys, wallets, groups and actions.
/// @notice Every administrative write for an account is authorized by one rule:
///   1. the sender is the account's admin wallet and the account is unmanaged (ChainSecured), or
///   2. the sender is an authorized payer, the account is managed, and `keyHash` is the account's
///      master hash or a live usage key of the account holding the scope the function needs.
/// Owner-only functions (usage keys, wallet guardrails, conversion) accept case 1, or case 2 with
/// the master hash.
/// Payers name the account by an API-key hash (the key namespace); an admin wallet by any hash
/// that resolves to its account, a wallet lookup hash first (AccountConfigStorage, Layout).
/// `multicall` batches writes into one transaction with the same sender, e.g. `registerActions`
/// before the group write that lists the newly registered CIDs.
/// Every write emits an event whose first indexed topic is the account's master hash, so one
/// log filter on this contract tells a listener which accounts changed.
/// @dev Deployed behind an ERC-1967 proxy (UUPS). The paged read views live in
/// `AccountConfigViews`, which this contract's fallback delegatecalls, so that each contract stays
/// under the 24 KiB code-size limit; callers see one ABI at the proxy address.
contract AccountConfig is
    Initializable,
    UUPSUpgradeable,
    Ownable2StepUpgradeable,
    MulticallUpgradeable,
    AccountConfigStorage
{
    using EnumerableSet for EnumerableSet.UintSet;
    using EnumerableSet for EnumerableSet.AddressSet;

    // ─── scopes (bit flags; a function may need several) ──────────────────────────────────
    uint256 private constant OWNER = 1 << 0;
    uint256 private constant PKP_CREATE = 1 << 1;
    uint256 private constant GROUP_CREATE = 1 << 2;
    uint256 private constant GROUP_DELETE = 1 << 3;
    uint256 private constant MANAGE_ACTIONS = 1 << 4; // in the given group
    uint256 private constant ADD_PKP = 1 << 5; // in the given group
    uint256 private constant REMOVE_PKP = 1 << 6; // in the given group
    uint256 private constant MANAGE_ACTIONS_SOME = 1 << 7; // in at least one group
    uint256 private constant MANAGE_ACTIONS_ALL = 1 << 8; // wildcard 0 in the list

    /// @notice The AccountConfigViews deployment this implementation forwards read views to.
    /// @custom:oz-upgrades-unsafe-allow state-variable-immutable
    address public immutable viewsImplementation;

    // ─── events (master hash first and indexed) ───────────────────────────────────────────
    event AccountCreated(uint256 indexed master, address indexed admin, bool managed);
    event AccountConvertedToChainSecured(uint256 indexed master, address indexed newAdmin);
    event ChainSecuredAccountOwnershipTransferred(
        uint256 indexed master, address indexed previousAdmin, address indexed newAdmin
    );
    event UsageApiKeySet(uint256 indexed master, uint256 indexed keyHash);
    event UsageApiKeyMetadataUpdated(uint256 indexed master, uint256 indexed keyHash);
    event UsageApiKeyRemoved(uint256 indexed master, uint256 indexed keyHash);
    event WalletRegistered(uint256 indexed master, address indexed wallet, uint256 walletId);
    event WalletGuardrailSet(uint256 indexed master, address indexed wallet, bytes32 guardrailHash, string document);
    event UsageKeyGuardrailSet(
        uint256 indexed master, uint256 indexed usageKeyHash, bytes32 guardrailHash, string document
    );
    event GroupAdded(uint256 indexed master, uint256 indexed groupId);
    event GroupUpdated(uint256 indexed master, uint256 indexed groupId);
    event GroupRemoved(uint256 indexed master, uint256 indexed groupId);
    event ActionAddedToGroup(uint256 indexed master, uint256 indexed groupId, uint256 indexed cidHash);
    event ActionRemovedFromGroup(uint256 indexed master, uint256 indexed groupId, uint256 indexed cidHash);
    event PkpAddedToGroup(uint256 indexed master, uint256 indexed groupId, address indexed wallet);
    event PkpRemovedFromGroup(uint256 indexed master, uint256 indexed groupId, address indexed wallet);
    event ActionAdded(uint256 indexed master, uint256 indexed cidHash);
    event ActionRemoved(uint256 indexed master, uint256 indexed cidHash);
    event ActionMetadataUpdated(uint256 indexed master, uint256 indexed cidHash);
    event ApiPayersSet(address[] payers);
    event AdminApiPayerSet(address indexed payer);

    // ─── setup and upgrades ────────────────────────────────────────────────────────────────

    /// @custom:oz-upgrades-unsafe-allow constructor
    constructor(address views) {
        viewsImplementation = views;
        _disableInitializers();
    }

    function initialize(address initialOwner) external initializer {
        __Ownable_init(initialOwner);
    }

    function _authorizeUpgrade(address) internal override onlyOwner {}

    function version() external pure virtual returns (string memory) {
        return "2";
    }

    /// Forwards every other call (the read views) to AccountConfigViews in this storage context.
    fallback() external {
        address views = viewsImplementation;
        // Uses memory past the free-memory pointer only, and never returns to Solidity code.
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            calldatacopy(ptr, 0, calldatasize())
            let ok := delegatecall(gas(), views, ptr, calldatasize(), 0, 0)
            returndatacopy(ptr, 0, returndatasize())
            if iszero(ok) { revert(ptr, returndatasize()) }
            return(ptr, returndatasize())
        }
    }

    // ─── payers ────────────────────────────────────────────────────────────────────────────

    /// @notice Replaces the set of payers allowed to write for managed accounts.
    /// Callable by the contract owner or the admin payer.
    function setApiPayers(address[] calldata payers) external {
        Layout storage l = _layout();
        if (msg.sender != owner() && msg.sender != l.adminPayer) revert OwnableUnauthorizedAccount(msg.sender);
        if (payers.length > MAX_PAYERS) revert LimitExceeded("payers", MAX_PAYERS);
        _clear(l.payers);
        for (uint256 i; i < payers.length; ++i) {
            if (payers[i] == address(0)) revert InvalidRequest("payer is the zero address");
            l.payers.add(payers[i]);
        }
        emit ApiPayersSet(payers);
    }

    function setAdminApiPayer(address payer) external onlyOwner {
        _layout().adminPayer = payer;
        emit AdminApiPayerSet(payer);
    }

    function apiPayers() external view returns (address[] memory) {
        return _layout().payers.values();
    }

    function adminApiPayer() external view returns (address) {
        return _layout().adminPayer;
    }

    // ─── accounts ──────────────────────────────────────────────────────────────────────────

    /// @notice Creates a managed (API-mode) account. Payers only. Registers the Account Master
    /// Wallet as wallet 0 and makes it the account's admin, in one transaction.
    function newAccount(
        uint256 apiKeyHash,
        string calldata name,
        string calldata description,
        address amwAddress,
        uint256 amwDerivation
    ) external {
        Layout storage l = _layout();
        if (!l.payers.contains(msg.sender)) revert NoAccountAccess(apiKeyHash, msg.sender);
        if (apiKeyHash == 0) revert InvalidRequest("api key hash is zero");
        if (amwAddress == address(0)) revert InvalidRequest("wallet is the zero address");
        if (amwDerivation == 0) revert InvalidRequest("derivation is zero");
        _checkText(name, description);
        // A key hash in use, or the master of an account a wallet created (those live only in the
        // alias namespace): either would hand newAccount an existing account to overwrite.
        if (l.hashes[apiKeyHash].kind != HashKind.None || l.accounts[apiKeyHash].nextGroupId != 0) revert AccountAlreadyExists(apiKeyHash);
        if (l.wallets[amwAddress].master != 0) revert WalletAlreadyRegistered(amwAddress);
        _recordAdmin(l, amwAddress, apiKeyHash);

        l.hashes[apiKeyHash] = HashEntry(apiKeyHash, HashKind.Master);
        Account storage a = _createAccount(l, apiKeyHash, amwAddress, true, name, description);
        _registerWallet(l, a, apiKeyHash, amwAddress, amwDerivation, "", "");
    }

    /// @notice Creates an unmanaged (ChainSecured) account administered by the sender. Its master
    /// hash is the sender's wallet lookup hash, and `amwAddress` becomes wallet 0, the Account
    /// Master Wallet: the PKP whose derivation is the master hash. The contract cannot derive it;
    /// the enclave answers it (`create_wallet_with_signature`) and refuses to use a wallet whose
    /// derived address differs from the registered one.
    function newChainSecuredAccount(string calldata name, string calldata description, address amwAddress) external {
        Layout storage l = _layout();
        uint256 master = _recordAdmin(l, msg.sender, 0);
        if (amwAddress == address(0)) revert InvalidRequest("wallet is the zero address");
        if (l.wallets[amwAddress].master != 0) revert WalletAlreadyRegistered(amwAddress);
        _checkText(name, description);
        Account storage a = _createAccount(l, master, msg.sender, false, name, description);
        _registerWallet(l, a, master, amwAddress, master, "", "");
    }

    /// @notice Converts a managed account to ChainSecured with `newAdmin` as its admin wallet.
    /// Callable by a payer or the contract owner, with the account's master hash only.
    function convertToChainSecuredAccount(uint256 apiKeyHash, address newAdmin) external {
        Layout storage l = _layout();
        if (!l.payers.contains(msg.sender) && msg.sender != owner()) {
            revert NoAccountAccess(apiKeyHash, msg.sender);
        }
        if (newAdmin == address(0)) revert InvalidRequest("new admin is the zero address");
        if (_accountOf(apiKeyHash) == 0) revert AccountDoesNotExist(apiKeyHash);
        if (l.hashes[apiKeyHash].kind != HashKind.Master) revert NotOwner();
        Account storage a = l.accounts[apiKeyHash];
        if (!a.managed) revert InvalidRequest("account is not managed");
        _recordAdmin(l, newAdmin, apiKeyHash);

        a.managed = false;
        a.admin = newAdmin;
        emit AccountConvertedToChainSecured(apiKeyHash, newAdmin);
    }

    /// @notice Hands a ChainSecured account to a new admin wallet. Only the current admin may call
    /// it; `apiKeyHash` may be the master hash or any hash that resolves to it. The checks run in
    /// the specification's order.
    function transferChainSecuredAccountOwnership(uint256 apiKeyHash, address newAdmin) external {
        Layout storage l = _layout();
        if (newAdmin == address(0)) revert InvalidRequest("new admin is the zero address");
        uint256 master = _accountOf(apiKeyHash);
        if (master == 0) revert AccountDoesNotExist(apiKeyHash);
        Account storage a = l.accounts[master];
        if (a.managed) revert InvalidRequest("account is managed");
        address previous = a.admin;
        if (msg.sender != previous) revert NoAccountAccess(apiKeyHash, msg.sender);
        if (newAdmin == previous) revert InvalidRequest("new admin is the current admin");
        _recordAdmin(l, newAdmin, master);

        a.admin = newAdmin;
        emit ChainSecuredAccountOwnershipTransferred(master, previous, newAdmin);
    }

    // ─── usage keys (owner only) ───────────────────────────────────────────────────────────

    /// @notice Creates a usage key or replaces all of its permissions and metadata.
    function setUsageApiKey(
        uint256 accountHash,
        uint256 usageKeyHash,
        uint256 expiration,
        uint256 balance,
        string calldata name,
        string calldata description,
        bool canCreateGroups,
        bool canDeleteGroups,
        bool canCreatePkps,
        uint256[] calldata manageIpfsIdsInGroups,
        uint256[] calldata addPkpToGroups,
        uint256[] calldata removePkpFromGroups,
        uint256[] calldata executeInGroups
    ) external {
        (uint256 master, Account storage a) = _authorize(accountHash, OWNER, 0);
        Layout storage l = _layout();
        if (usageKeyHash == 0) revert InvalidRequest("usage key hash is zero");
        HashEntry storage e = l.hashes[usageKeyHash];
        bool ours = e.master == master && (e.kind == HashKind.UsageKey || e.kind == HashKind.RemovedUsageKey);
        if (e.kind != HashKind.None && !ours) revert InvalidRequest("usage key hash is already in use");
        if (expiration != 0 && expiration <= block.timestamp) revert InvalidRequest("expiration is in the past");
        _checkText(name, description);
        _checkGroupIds(a, manageIpfsIdsInGroups);
        _checkGroupIds(a, addPkpToGroups);
        _checkGroupIds(a, removePkpFromGroups);
        _checkGroupIds(a, executeInGroups);

        UsageKey storage k = a.usageKeys[usageKeyHash];
        k.expiration = expiration;
        k.balance = balance;
        k.name = name;
        k.description = description;
        k.canCreateGroups = canCreateGroups;
        k.canDeleteGroups = canDeleteGroups;
        k.canCreatePkps = canCreatePkps;
        k.manageIpfsIdsInGroups = manageIpfsIdsInGroups;
        k.addPkpToGroups = addPkpToGroups;
        k.removePkpFromGroups = removePkpFromGroups;
        k.executeInGroups = executeInGroups;
        a.usageKeyHashes.add(usageKeyHash);
        l.hashes[usageKeyHash] = HashEntry(master, HashKind.UsageKey);
        emit UsageApiKeySet(master, usageKeyHash);
    }

    function updateUsageApiKeyMetadata(
        uint256 accountHash,
        uint256 usageKeyHash,
        string calldata name,
        string calldata description
    ) external {
        (uint256 master, Account storage a) = _authorize(accountHash, OWNER, 0);
        UsageKey storage k = _usageKey(a, usageKeyHash);
        _checkText(name, description);
        k.name = name;
        k.description = description;
        emit UsageApiKeyMetadataUpdated(master, usageKeyHash);
    }

    /// @notice Removes a usage key: its hash stops resolving and authorizes nothing.
    function removeUsageApiKey(uint256 accountHash, uint256 usageKeyHash) external {
        (uint256 master, Account storage a) = _authorize(accountHash, OWNER, 0);
        _usageKey(a, usageKeyHash);
        delete a.usageKeys[usageKeyHash];
        a.usageKeyHashes.remove(usageKeyHash);
        _layout().hashes[usageKeyHash].kind = HashKind.RemovedUsageKey;
        emit UsageApiKeyRemoved(master, usageKeyHash);
    }

    /// @notice Sets, replaces or (with an empty document) removes a usage key's guardrail: a document
    /// like a wallet's that every signature a run of the key asks for must also pass, whatever the
    /// wallet (docs/design/guardrails.md, Narrowed per usage key). Owner only; kept as a wallet's is.
    function setUsageKeyGuardrail(uint256 accountHash, uint256 usageKeyHash, string calldata document) external {
        (uint256 master, Account storage a) = _authorize(accountHash, OWNER, 0);
        UsageKey storage k = _usageKey(a, usageKeyHash);
        (k.guardrail, k.guardrailBlock) = _guardrail(document);
        emit UsageKeyGuardrailSet(master, usageKeyHash, k.guardrail, document);
    }

    // ─── wallets ───────────────────────────────────────────────────────────────────────────

    /// @notice Registers a wallet (PKP) derived in the enclave to the account. Returns its id.
    function registerWalletDerivation(
        uint256 keyHash,
        address wallet,
        uint256 derivation,
        string calldata name,
        string calldata description
    ) external returns (uint256 walletId) {
        (uint256 master, Account storage a) = _authorize(keyHash, PKP_CREATE, 0);
        Layout storage l = _layout();
        if (wallet == address(0)) revert InvalidRequest("wallet is the zero address");
        if (derivation == 0) revert InvalidRequest("derivation is zero");
        if (l.wallets[wallet].master != 0) revert WalletAlreadyRegistered(wallet);
        _checkText(name, description);
        return _registerWallet(l, a, master, wallet, derivation, name, description);
    }

    /// @notice Sets, replaces or (with an empty document) removes a wallet's guardrail: the JSON
    /// document that says what the wallet may sign (docs/design/guardrails.md). Owner only. The
    /// contract never parses it: it keeps the keccak256 of its exact bytes and the block whose
    /// `WalletGuardrailSet` event carries them (event data, not storage). Setting the same document
    /// again is allowed and moves the block.
    function setWalletGuardrail(uint256 keyHash, address wallet, string calldata document) external {
        (uint256 master,) = _authorize(keyHash, OWNER, 0);
        // As `_checkWalletOf`, without its address(0) wildcard: no wallet's master is 0.
        Wallet storage w = _layout().wallets[wallet];
        if (w.master != master) revert WalletNotRegistered(wallet);
        (w.guardrail, w.guardrailBlock) = _guardrail(document);
        emit WalletGuardrailSet(master, wallet, w.guardrail, document);
    }

    // ─── groups ────────────────────────────────────────────────────────────────────────────

    function addGroup(
        uint256 keyHash,
        string calldata name,
        string calldata description,
        uint256[] calldata cidHashes,
        address[] calldata wallets
    ) external returns (uint256 groupId) {
        // Filling a group is adding actions and wallets to it: a usage key needs those scopes too,
        // and for a group that does not exist yet only a list's wildcard 0 covers it. Otherwise
        // group:create alone would let a key pair its own code with any wallet of the account.
        uint256 scopes = GROUP_CREATE;
        if (cidHashes.length != 0) scopes |= MANAGE_ACTIONS;
        if (wallets.length != 0) scopes |= ADD_PKP;
        (uint256 master, Account storage a) = _authorize(keyHash, scopes, 0);
        _checkText(name, description);
        groupId = a.nextGroupId++;
        a.groupIds.add(groupId);
        Group storage g = a.groups[groupId];
        g.name = name;
        g.description = description;
        _fillGroup(master, a, g, cidHashes, wallets);
        emit GroupAdded(master, groupId);
    }

    /// @notice Replaces a group's metadata, actions and wallets. Needs all three group scopes.
    function updateGroup(
        uint256 keyHash,
        uint256 groupId,
        string calldata name,
        string calldata description,
        uint256[] calldata cidHashes,
        address[] calldata wallets
    ) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS | ADD_PKP | REMOVE_PKP, groupId);
        Group storage g = _group(a, groupId);
        _checkText(name, description);
        g.name = name;
        g.description = description;
        _clear(g.cids);
        _clear(g.wallets);
        _fillGroup(master, a, g, cidHashes, wallets);
        emit GroupUpdated(master, groupId);
    }

    function removeGroup(uint256 keyHash, uint256 groupId) external {
        (uint256 master, Account storage a) = _authorize(keyHash, GROUP_DELETE, 0);
        Group storage g = _group(a, groupId);
        _clear(g.cids);
        _clear(g.wallets);
        delete g.name;
        delete g.description;
        a.groupIds.remove(groupId);
        emit GroupRemoved(master, groupId);
    }

    /// @notice Adds a registered action (or 0, any action) to a group. Adding one already there is
    /// a no-op. `registerActions` in the same `multicall` registers a CID first.
    function addActionToGroup(uint256 keyHash, uint256 groupId, uint256 cidHash) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS, groupId);
        Group storage g = _group(a, groupId);
        _checkRegistered(a, cidHash);
        g.cids.add(cidHash);
        if (g.cids.length() > MAX_GROUP_CIDS) revert LimitExceeded("cids", MAX_GROUP_CIDS);
        emit ActionAddedToGroup(master, groupId, cidHash);
    }

    function removeActionFromGroup(uint256 keyHash, uint256 groupId, uint256 cidHash) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS, groupId);
        Group storage g = _group(a, groupId);
        if (!g.cids.remove(cidHash)) revert ActionDoesNotExist(cidHash);
        emit ActionRemovedFromGroup(master, groupId, cidHash);
    }

    /// @notice Adds a wallet of the account (or address(0), any wallet of the account) to a group.
    function addPkpToGroup(uint256 keyHash, uint256 groupId, address wallet) external {
        (uint256 master, Account storage a) = _authorize(keyHash, ADD_PKP, groupId);
        Group storage g = _group(a, groupId);
        _checkWalletOf(master, wallet);
        g.wallets.add(wallet);
        if (g.wallets.length() > MAX_GROUP_WALLETS) revert LimitExceeded("wallets", MAX_GROUP_WALLETS);
        emit PkpAddedToGroup(master, groupId, wallet);
    }

    function removePkpFromGroup(uint256 keyHash, uint256 groupId, address wallet) external {
        (uint256 master, Account storage a) = _authorize(keyHash, REMOVE_PKP, groupId);
        Group storage g = _group(a, groupId);
        _checkWalletOf(master, wallet);
        if (!g.wallets.remove(wallet)) revert InvalidRequest("wallet is not in the group");
        emit PkpRemovedFromGroup(master, groupId, wallet);
    }

    // ─── actions ───────────────────────────────────────────────────────────────────────────

    /// @notice Registers an action's CID and metadata with the account (or replaces its metadata).
    function addAction(
        uint256 keyHash,
        uint256 cidHash,
        string calldata cid,
        string calldata name,
        string calldata description
    ) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS_SOME, 0);
        if (_checkCid(cid) != cidHash) revert InvalidRequest("cid hash does not match cid");
        _checkText(name, description);
        a.actionHashes.add(cidHash);
        Action storage act = a.actions[cidHash];
        act.cid = cid;
        act.name = name;
        act.description = description;
        emit ActionAdded(master, cidHash);
    }

    /// @notice Registers each CID that the account has not registered yet, with no name or
    /// description; registered ones keep theirs. For CIDs about to go into group `groupId` (0: a
    /// group about to be created), so it needs what putting them there needs: group:manageActions
    /// for that group (for 0, the wildcard), and refuses as that write would. One transaction:
    /// `multicall([registerActions(k, g, cids), addActionToGroup(k, g, hash)])`.
    function registerActions(uint256 keyHash, uint256 groupId, string[] calldata cids) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS, groupId);
        if (groupId != 0) _group(a, groupId);
        if (cids.length > MAX_GROUP_CIDS) revert LimitExceeded("cids", MAX_GROUP_CIDS);
        for (uint256 i; i < cids.length; ++i) {
            uint256 cidHash = _checkCid(cids[i]);
            if (a.actionHashes.add(cidHash)) {
                a.actions[cidHash].cid = cids[i];
                emit ActionAdded(master, cidHash);
            }
        }
    }

    function updateActionMetadata(
        uint256 keyHash,
        uint256 cidHash,
        string calldata name,
        string calldata description
    ) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS_SOME, 0);
        if (!a.actionHashes.contains(cidHash)) revert ActionDoesNotExist(cidHash);
        _checkText(name, description);
        Action storage act = a.actions[cidHash];
        act.name = name;
        act.description = description;
        emit ActionMetadataUpdated(master, cidHash);
    }

    /// @notice Unregisters an action and drops it from every group of the account.
    function removeAction(uint256 keyHash, uint256 cidHash) external {
        (uint256 master, Account storage a) = _authorize(keyHash, MANAGE_ACTIONS_ALL, 0);
        bool found = a.actionHashes.remove(cidHash);
        delete a.actions[cidHash];
        uint256 n = a.groupIds.length();
        for (uint256 i; i < n; ++i) {
            uint256 groupId = a.groupIds.at(i);
            if (a.groups[groupId].cids.remove(cidHash)) {
                found = true;
                emit ActionRemovedFromGroup(master, groupId, cidHash);
            }
        }
        if (!found) revert ActionDoesNotExist(cidHash);
        emit ActionRemoved(master, cidHash);
    }

    // ─── execution authorization and key resolution ────────────────────────────────────────

    /// @notice What an API-key hash is, in the key namespace only: a wallet's lookup hash is not a
    /// key (`accountOfWallet` reads those). `live` is true only for the master hash of a managed
    /// account and for a usage key that has not expired; removed keys resolve to nothing.
    function resolveKey(uint256 hash) external view returns (uint256 master, bool isMaster, bool managed, bool live) {
        Layout storage l = _layout();
        HashEntry storage e = l.hashes[hash];
        if (e.kind != HashKind.Master && e.kind != HashKind.UsageKey) return (0, false, false, false);
        master = e.master;
        Account storage a = l.accounts[master];
        managed = a.managed;
        isMaster = e.kind == HashKind.Master;
        live = isMaster ? managed : !_expired(a.usageKeys[hash]);
    }

    /// @notice Decides a run and every wallet it may touch. `keyHash` must be live: the master of
    /// a managed account (every group of the account) or a usage key (the groups in its
    /// `executeInGroups`, 0 = all). The run may execute when one of those groups lists `cidHash`
    /// or 0. A wallet is allowed only when one such group also lists it or address(0), and the
    /// wallet is registered to the same account. A zero `cidHash` is never an action. The groups
    /// are read until the answer is whole (the run may execute and every wallet is allowed): a
    /// grant costs the groups up to the first that gives it all, not every group of the account.
    /// `guardrails[j]` is an allowed wallet's guardrail hash (`setWalletGuardrail`), 0 when it has
    /// none or is not allowed; the enclave fetches and checks the document it names.
    function authorizeExecution(uint256 keyHash, uint256 cidHash, address[] calldata wallets)
        external
        view
        returns (
            bool canExecute,
            bool[] memory walletAllowed,
            uint256[] memory derivations,
            bytes32[] memory guardrails
        )
    {
        walletAllowed = new bool[](wallets.length);
        derivations = new uint256[](wallets.length);
        guardrails = new bytes32[](wallets.length);
        if (cidHash == 0) return (false, walletAllowed, derivations, guardrails);
        Layout storage l = _layout();
        HashEntry storage e = l.hashes[keyHash];
        uint256 master = e.master;
        Account storage a = l.accounts[master];

        // The key's groups, read one at a time (never copied whole): every group of the account, or
        // the usage key's own list.
        UsageKey storage k = a.usageKeys[keyHash];
        bool everyGroup;
        if (e.kind == HashKind.Master) {
            if (!a.managed) return (false, walletAllowed, derivations, guardrails);
            everyGroup = true;
        } else if (e.kind == HashKind.UsageKey) {
            if (_expired(k)) return (false, walletAllowed, derivations, guardrails);
            everyGroup = _contains(k.executeInGroups, 0);
        } else {
            return (false, walletAllowed, derivations, guardrails);
        }

        uint256 allowedCount;
        uint256 count = everyGroup ? a.groupIds.length() : k.executeInGroups.length;
        for (uint256 i; i < count; ++i) {
            uint256 groupId = everyGroup ? a.groupIds.at(i) : k.executeInGroups[i];
            if (!everyGroup && !a.groupIds.contains(groupId)) continue; // a removed group in a key's list
            Group storage g = a.groups[groupId];
            if (!g.cids.contains(cidHash) && !g.cids.contains(0)) continue;
            canExecute = true;
            bool anyWallet = g.wallets.contains(address(0));
            for (uint256 j; j < wallets.length; ++j) {
                if (walletAllowed[j]) continue;
                Wallet storage w = l.wallets[wallets[j]];
                if (w.master != master || wallets[j] == address(0)) continue;
                if (anyWallet || g.wallets.contains(wallets[j])) {
                    walletAllowed[j] = true;
                    derivations[j] = w.derivation;
                    guardrails[j] = w.guardrail;
                    ++allowedCount;
                }
            }
            // Nothing the other groups could add: every answer is already true.
            if (allowedCount == wallets.length) break;
        }
    }

    // ─── internals ─────────────────────────────────────────────────────────────────────────

    /// The one access rule. Returns the account the hash resolves to, or reverts.
    function _authorize(uint256 keyHash, uint256 scopes, uint256 groupId)
        private
        view
        returns (uint256 master, Account storage a)
    {
        Layout storage l = _layout();
        HashEntry storage e = l.hashes[keyHash];
        bool isKey = e.kind == HashKind.Master || e.kind == HashKind.UsageKey;
        if (!(isKey && l.accounts[e.master].managed && l.payers.contains(msg.sender))) {
            // An admin wallet writing for its unmanaged account, named by any hash that resolves to it.
            master = _accountOf(keyHash);
            if (master == 0) revert AccountDoesNotExist(keyHash);
            a = l.accounts[master];
            if (a.managed || msg.sender != a.admin) revert NoAccountAccess(keyHash, msg.sender);
            return (master, a);
        }
        // A payer on behalf of a managed account's master key or a scoped usage key: API keys only.
        master = e.master;
        a = l.accounts[master];
        if (e.kind == HashKind.Master) return (master, a);
        UsageKey storage k = a.usageKeys[keyHash];
        if (_expired(k)) revert KeyExpired(keyHash);
        if (scopes & OWNER != 0) revert NotOwner();
        if (scopes & PKP_CREATE != 0 && !k.canCreatePkps) revert NotAllowed("pkp:create", 0);
        if (scopes & GROUP_CREATE != 0 && !k.canCreateGroups) revert NotAllowed("group:create", 0);
        if (scopes & GROUP_DELETE != 0 && !k.canDeleteGroups) revert NotAllowed("group:delete", 0);
        if (scopes & MANAGE_ACTIONS != 0 && !_inGroup(k.manageIpfsIdsInGroups, groupId)) {
            revert NotAllowed("group:manageActions", groupId);
        }
        if (scopes & ADD_PKP != 0 && !_inGroup(k.addPkpToGroups, groupId)) revert NotAllowed("group:addPkp", groupId);
        if (scopes & REMOVE_PKP != 0 && !_inGroup(k.removePkpFromGroups, groupId)) {
            revert NotAllowed("group:removePkp", groupId);
        }
        if (scopes & MANAGE_ACTIONS_SOME != 0 && !_inSomeGroup(a, k.manageIpfsIdsInGroups)) {
            revert NotAllowed("group:manageActions", 0);
        }
        if (scopes & MANAGE_ACTIONS_ALL != 0 && !_contains(k.manageIpfsIdsInGroups, 0)) {
            revert NotAllowed("group:manageActions", 0);
        }
    }

    function _createAccount(
        Layout storage l,
        uint256 master,
        address admin,
        bool managed,
        string calldata name,
        string calldata description
    ) private returns (Account storage a) {
        a = l.accounts[master];
        a.admin = admin;
        a.managed = managed;
        a.nextGroupId = 1;
        a.name = name;
        a.description = description;
        emit AccountCreated(master, admin, managed);
    }

    /// Records `wallet` as becoming an admin of `master` (0: of the account it creates, whose master
    /// is its own lookup hash): its alias, and `everAdmin`, the guard that outlives any alias. Only
    /// the alias namespace is checked, so no usage key can keep a wallet from an account.
    function _recordAdmin(Layout storage l, address wallet, uint256 master) private returns (uint256) {
        uint256 alias_ = uint256(keccak256(abi.encodePacked(wallet)));
        if (l.everAdmin[wallet] || _aliasOf(alias_) != 0) revert AccountAlreadyExists(alias_);
        if (master == 0) master = alias_;
        l.aliases[alias_] = master;
        l.everAdmin[wallet] = true;
        return master;
    }

    function _registerWallet(
        Layout storage l,
        Account storage a,
        uint256 master,
        address wallet,
        uint256 derivation,
        string memory name,
        string memory description
    ) private returns (uint256 walletId) {
        walletId = a.wallets.length;
        a.wallets.push(wallet);
        // Member by member: a fresh wallet's guardrail fields are already 0, and writing them would cost.
        Wallet storage w = l.wallets[wallet];
        w.master = master;
        w.derivation = derivation;
        w.id = walletId;
        w.name = name;
        w.description = description;
        emit WalletRegistered(master, wallet, walletId);
    }

    function _fillGroup(
        uint256 master,
        Account storage a,
        Group storage g,
        uint256[] calldata cidHashes,
        address[] calldata wallets
    ) private {
        if (cidHashes.length > MAX_GROUP_CIDS) revert LimitExceeded("cids", MAX_GROUP_CIDS);
        if (wallets.length > MAX_GROUP_WALLETS) revert LimitExceeded("wallets", MAX_GROUP_WALLETS);
        for (uint256 i; i < cidHashes.length; ++i) {
            _checkRegistered(a, cidHashes[i]);
            g.cids.add(cidHashes[i]);
        }
        for (uint256 i; i < wallets.length; ++i) {
            _checkWalletOf(master, wallets[i]);
            g.wallets.add(wallets[i]);
        }
    }

    /// A group lists only actions the account registered (so every listed hash has its CID), or 0.
    function _checkRegistered(Account storage a, uint256 cidHash) private view {
        if (cidHash != 0 && !a.actionHashes.contains(cidHash)) revert ActionDoesNotExist(cidHash);
    }

    /// The hash of a CID the contract will keep.
    function _checkCid(string calldata cid) private pure returns (uint256) {
        if (bytes(cid).length == 0) revert InvalidRequest("cid is empty");
        if (bytes(cid).length > MAX_CID_BYTES) revert LimitExceeded("cid", MAX_CID_BYTES);
        return uint256(keccak256(bytes(cid)));
    }

    function _checkWalletOf(uint256 master, address wallet) private view {
        if (wallet != address(0) && _layout().wallets[wallet].master != master) revert WalletNotRegistered(wallet);
    }

    function _checkGroupIds(Account storage a, uint256[] calldata ids) private view {
        if (ids.length > MAX_KEY_GROUP_IDS) revert LimitExceeded("group ids", MAX_KEY_GROUP_IDS);
        for (uint256 i; i < ids.length; ++i) {
            if (ids[i] != 0 && !a.groupIds.contains(ids[i])) revert GroupDoesNotExist(ids[i]);
        }
    }

    function _checkText(string calldata name, string calldata description) private pure {
        if (bytes(name).length > MAX_NAME_BYTES) revert LimitExceeded("name", MAX_NAME_BYTES);
        if (bytes(description).length > MAX_DESCRIPTION_BYTES) {
            revert LimitExceeded("description", MAX_DESCRIPTION_BYTES);
        }
    }

    /// A guardrail as it is kept, a wallet's or a usage key's: the keccak256 of the document's bytes
    /// and this block (whose event carries them), or (0, 0) for an empty document, which removes it.
    function _guardrail(string calldata document) private view returns (bytes32 guardrailHash, uint256 blockNumber) {
        if (bytes(document).length > MAX_GUARDRAIL_BYTES) revert LimitExceeded("guardrail bytes", MAX_GUARDRAIL_BYTES);
        if (bytes(document).length == 0) return (0, 0);
        return (keccak256(bytes(document)), block.number);
    }

    function _usageKey(Account storage a, uint256 keyHash) private view returns (UsageKey storage) {
        if (!a.usageKeyHashes.contains(keyHash)) revert AccountDoesNotExist(keyHash);
        return a.usageKeys[keyHash];
    }

    function _inGroup(uint256[] storage ids, uint256 groupId) private view returns (bool) {
        for (uint256 i; i < ids.length; ++i) {
            if (ids[i] == 0 || ids[i] == groupId) return true;
        }
        return false;
    }

    /// Whether a usage-key list grants its scope in at least one group the account still has.
    function _inSomeGroup(Account storage a, uint256[] storage ids) private view returns (bool) {
        for (uint256 i; i < ids.length; ++i) {
            if (ids[i] == 0 || a.groupIds.contains(ids[i])) return true;
        }
        return false;
    }

    function _clear(EnumerableSet.UintSet storage set) private {
        for (uint256 n = set.length(); n > 0; --n) {
            set.remove(set.at(n - 1));
        }
    }

    function _clear(EnumerableSet.AddressSet storage set) private {
        for (uint256 n = set.length(); n > 0; --n) {
            set.remove(set.at(n - 1));
        }
    }
}
