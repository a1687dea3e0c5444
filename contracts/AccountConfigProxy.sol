// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ERC1967Proxy} from "@openzeppelin/contracts/proxy/ERC1967/ERC1967Proxy.sol";

/// @title AccountConfigProxy — the ERC-1967 proxy that holds AccountConfig's state.
/// @dev A named subclass so explorers and deploy logs say what the proxy fronts; it adds no code.
contract AccountConfigProxy is ERC1967Proxy {
    constructor(address implementation, bytes memory initData) ERC1967Proxy(implementation, initData) {}
}
