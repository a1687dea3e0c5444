// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";

/// @title ReceiptAnchor — where enclave instances anchor the receipts they signed.
/// @notice Each enclave instance signs its run receipts in batches (docs/guides/receipts.md); every
/// batch has a 32-byte head. The heads an instance signs during one epoch make a Merkle tree, and the
/// instance's receipt key signs the tree's root here, once per epoch. An epoch is named by the unix
/// second it opened (strictly increasing per key), and every receipt names the epoch its batch
/// belongs to, so a receipt can be checked against the root anchored for that epoch: it existed no
/// later than the anchor's block, and the instance cannot show anyone a receipt of that epoch that is
/// not in the anchored tree.
/// @dev The signer, not the sender, is who anchors: any payer may carry the transaction, but only
/// the receipt key (bound to the instance's attestation) can sign a root, and an epoch's root is
/// written once and never replaced. No owner, no upgrade, no state but the anchors.
contract ReceiptAnchor {
    /// @notice What an epoch's anchor holds: the root of its heads' tree, how many heads it has, and
    /// the block time it was anchored at.
    struct Anchor {
        bytes32 root;
        uint32 heads;
        uint64 anchoredAt;
    }

    /// @notice The anchors, by receipt key address and epoch.
    mapping(address signer => mapping(uint64 epoch => Anchor)) public anchors;

    /// @notice The epoch a signer anchored last (0: none yet).
    mapping(address signer => uint64 epoch) public lastEpoch;

    event Anchored(address indexed signer, uint64 indexed epoch, bytes32 root, uint32 heads);

    /// @notice An epoch's root is written once.
    error AlreadyAnchored(address signer, uint64 epoch);
    /// @notice A root of no heads, or a zero root, anchors nothing.
    error EmptyAnchor();

    /// @notice The digest the receipt key signs (EIP-191 over its 32 bytes): the domain, this chain
    /// and contract, the epoch, the root and the number of heads.
    function anchorDigest(uint64 epoch, bytes32 root, uint32 heads) public view returns (bytes32) {
        return keccak256(abi.encode(keccak256("sigil-receipt-anchor-v1"), block.chainid, address(this), epoch, root, heads));
    }

    /// @notice Anchors `root` (of `heads` batch heads) for `epoch` of the key that signed it.
    function anchor(uint64 epoch, bytes32 root, uint32 heads, bytes calldata signature) external {
        if (root == bytes32(0) || heads == 0) revert EmptyAnchor();
        address signer =
            ECDSA.recover(MessageHashUtils.toEthSignedMessageHash(anchorDigest(epoch, root, heads)), signature);
        if (anchors[signer][epoch].root != bytes32(0)) revert AlreadyAnchored(signer, epoch);
        anchors[signer][epoch] = Anchor({root: root, heads: heads, anchoredAt: uint64(block.timestamp)});
        if (epoch > lastEpoch[signer]) lastEpoch[signer] = epoch;
        emit Anchored(signer, epoch, root, heads);
    }
}
