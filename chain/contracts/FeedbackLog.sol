// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title FeedbackLog
/// @notice fleetd's append-only feedback log. Entries are only ever appended:
/// there is no owner and no function that edits, clears or deletes an entry.
/// @dev An entry is written either directly (the sender is msg.sender) or on
/// behalf of a sender who signed it with EIP-712 and whose signature a relayer
/// submits (the relayer pays gas; the entry records the signer).
///
/// Replay protection for signed entries is a compare-and-swap on a per-sender
/// key, not a sequential nonce: the signer names a key and the stamp it last
/// saw under it (prev); the entry is appended only if the stamp is still prev,
/// and the stamp then changes. Many processes can sign for one sender at once
/// without racing for a counter (different keys never conflict), a replayed
/// signature always fails (the stamp moved), and two processes posting under
/// the same key (fleetd uses the finding's fingerprint) cannot both succeed:
/// the loser learns the finding is already there.
contract FeedbackLog {
    /// @notice One log entry.
    struct Entry {
        address sender;
        uint64 timestamp;
        string text;
    }

    /// @notice Maximum length of an entry's text, in bytes.
    uint256 public constant MAX_TEXT = 2048;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant FEEDBACK_TYPEHASH =
        keccak256("Feedback(address sender,string text,bytes32 key,uint256 prev,uint256 deadline)");
    bytes32 private constant NAME_HASH = keccak256("FeedbackLog");
    bytes32 private constant VERSION_HASH = keccak256("1");

    /// @dev secp256k1n / 2: signatures with a larger s are malleable twins and refused.
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    uint256 private immutable _cachedChainId;
    bytes32 private immutable _cachedDomainSeparator;

    Entry[] private _entries;

    /// @notice The stamp of each sender's key: 0 until a signed entry is
    /// appended under it, then (uses << 64) | block timestamp of the latest.
    mapping(address => mapping(bytes32 => uint256)) public keyStamp;

    /// @notice Emitted for every appended entry; id is its index.
    event FeedbackSubmitted(uint256 indexed id, address indexed sender, uint64 timestamp);

    error EmptyText();
    error TextTooLong(uint256 length, uint256 max);
    error Expired(uint256 deadline, uint256 nowTs);
    error BadSignature();
    error StaleKey(bytes32 key, uint256 expected, uint256 actual);
    error IndexOutOfRange(uint256 index, uint256 count);

    constructor() {
        _cachedChainId = block.chainid;
        _cachedDomainSeparator = _buildDomainSeparator();
    }

    /// @notice Appends an entry whose sender is msg.sender.
    /// @return id the index of the new entry.
    function submitFeedback(string calldata text) external returns (uint256 id) {
        _checkText(text);
        return _append(msg.sender, text);
    }

    /// @notice Appends an entry on behalf of sender, who signed
    /// Feedback(sender, text, key, prev, deadline) with EIP-712, if
    /// keyStamp(sender, key) is still prev (else StaleKey), and moves the stamp
    /// on. msg.sender (the relayer) pays gas; the entry records sender.
    /// @param sig 65 bytes r, s, v, v in {27, 28} or {0, 1}; s must be in the lower half.
    /// @return id the index of the new entry.
    function submitFeedbackFor(
        address sender,
        string calldata text,
        bytes32 key,
        uint256 prev,
        uint256 deadline,
        bytes calldata sig
    ) external returns (uint256 id) {
        if (deadline < block.timestamp) revert Expired(deadline, block.timestamp);
        _checkText(text);
        uint256 actual = keyStamp[sender][key];
        if (actual != prev) revert StaleKey(key, prev, actual);
        address signer = _recover(_digest(sender, text, key, prev, deadline), sig);
        if (signer != sender) revert BadSignature();
        keyStamp[sender][key] = (((prev >> 64) + 1) << 64) | block.timestamp;
        return _append(sender, text);
    }

    /// @notice The EIP-712 domain separator (name "FeedbackLog", version "1", this chain, this contract).
    function domainSeparator() public view returns (bytes32) {
        if (block.chainid == _cachedChainId) return _cachedDomainSeparator;
        return _buildDomainSeparator();
    }

    /// @notice The EIP-712 digest a sender signs for submitFeedbackFor, so off-chain code can cross-check its hashing.
    function feedbackDigest(address sender, string calldata text, bytes32 key, uint256 prev, uint256 deadline)
        external
        view
        returns (bytes32)
    {
        return _digest(sender, text, key, prev, deadline);
    }

    /// @notice The number of entries.
    function feedbackCount() external view returns (uint256) {
        return _entries.length;
    }

    /// @notice The entry at index; reverts IndexOutOfRange past the end.
    function feedbackAt(uint256 index) external view returns (Entry memory) {
        uint256 n = _entries.length;
        if (index >= n) revert IndexOutOfRange(index, n);
        return _entries[index];
    }

    /// @notice Up to count entries from start. Clamped: empty when start is past the end,
    /// shorter when fewer than count entries remain.
    function feedbackRange(uint256 start, uint256 count) external view returns (Entry[] memory out) {
        uint256 n = _entries.length;
        if (start >= n) return new Entry[](0);
        uint256 left = n - start;
        if (count > left) count = left;
        out = new Entry[](count);
        for (uint256 i = 0; i < count; ++i) {
            out[i] = _entries[start + i];
        }
    }

    function _checkText(string calldata text) private pure {
        uint256 length = bytes(text).length;
        if (length == 0) revert EmptyText();
        if (length > MAX_TEXT) revert TextTooLong(length, MAX_TEXT);
    }

    function _append(address sender, string calldata text) private returns (uint256 id) {
        id = _entries.length;
        uint64 ts = uint64(block.timestamp);
        _entries.push(Entry({sender: sender, timestamp: ts, text: text}));
        emit FeedbackSubmitted(id, sender, ts);
    }

    function _buildDomainSeparator() private view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, VERSION_HASH, block.chainid, address(this)));
    }

    function _digest(address sender, string calldata text, bytes32 key, uint256 prev, uint256 deadline)
        private
        view
        returns (bytes32)
    {
        bytes32 structHash =
            keccak256(abi.encode(FEEDBACK_TYPEHASH, sender, keccak256(bytes(text)), key, prev, deadline));
        return keccak256(abi.encodePacked("\x19\x01", domainSeparator(), structHash));
    }

    /// @dev Recovers the signer of digest; reverts BadSignature on a malformed or malleable
    /// signature or when ecrecover fails (returns address(0)).
    function _recover(bytes32 digest, bytes calldata sig) private pure returns (address signer) {
        if (sig.length != 65) revert BadSignature();
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly ("memory-safe") {
            r := calldataload(sig.offset)
            s := calldataload(add(sig.offset, 32))
            v := byte(0, calldataload(add(sig.offset, 64)))
        }
        if (v < 27) v += 27;
        if (v != 27 && v != 28) revert BadSignature();
        if (uint256(s) > HALF_N) revert BadSignature();
        signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert BadSignature();
    }
}
