// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title FeedbackLogV2
/// @notice fleetd's append-only feedback log, version 2: the same entries,
/// submissions and keyed compare-and-swap as FeedbackLog (v1), at a fraction
/// of the gas. An entry's text is carried in the FeedbackText event (and the
/// transaction's calldata) instead of contract storage; storage keeps, per
/// entry, the sender, the time, the block and keccak256 of the text. There is
/// no owner and no function that edits, clears or deletes an entry.
/// @dev Readers get texts with eth_getLogs (FeedbackText, by block range
/// from the entry's recorded block) and check each against its stored hash,
/// so a text served by a node is verified against contract state. v1's
/// FeedbackSubmitted event is emitted unchanged, so event watchers work on
/// both versions. The views that return records are named recordAt and
/// recordRange (not feedbackAt and feedbackRange): a v1 reader pointed at
/// this contract fails its interface check instead of misreading records as
/// texts. version() returns 2; v1 has no version().
///
/// Replay protection for signed entries is a compare-and-swap on a per-sender
/// key, exactly as in v1 (see FeedbackLog.sol); the EIP-712 domain is
/// "FeedbackLog" version "2".
contract FeedbackLogV2 {
    /// @notice What storage keeps of one entry (two slots).
    struct Record {
        address sender;
        uint48 timestamp;
        uint48 blockNumber;
        bytes32 textHash;
    }

    /// @notice Maximum length of an entry's text, in bytes.
    uint256 public constant MAX_TEXT = 2048;

    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant FEEDBACK_TYPEHASH =
        keccak256("Feedback(address sender,string text,bytes32 key,uint256 prev,uint256 deadline)");
    bytes32 private constant NAME_HASH = keccak256("FeedbackLog");
    bytes32 private constant VERSION_HASH = keccak256("2");

    /// @dev secp256k1n / 2: signatures with a larger s are malleable twins and refused.
    uint256 private constant HALF_N = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    uint256 private immutable _cachedChainId;
    bytes32 private immutable _cachedDomainSeparator;

    /// @notice The block this log was deployed in: no entry is older.
    uint256 public immutable deployBlock;

    Record[] private _records;

    /// @notice The stamp of each sender's key: 0 until a signed entry is
    /// appended under it, then (uses << 64) | block timestamp of the latest.
    mapping(address => mapping(bytes32 => uint256)) public keyStamp;

    /// @notice Emitted for every appended entry; id is its index (as in v1).
    event FeedbackSubmitted(uint256 indexed id, address indexed sender, uint64 timestamp);

    /// @notice The text of entry id; keccak256(bytes(text)) is its record's textHash.
    event FeedbackText(uint256 indexed id, string text);

    error EmptyText();
    error TextTooLong(uint256 length, uint256 max);
    error Expired(uint256 deadline, uint256 nowTs);
    error BadSignature();
    error StaleKey(bytes32 key, uint256 expected, uint256 actual);
    error IndexOutOfRange(uint256 index, uint256 count);

    constructor() {
        _cachedChainId = block.chainid;
        _cachedDomainSeparator = _buildDomainSeparator();
        deployBlock = block.number;
    }

    /// @notice The log's version: 2.
    function version() external pure returns (uint256) {
        return 2;
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

    /// @notice The EIP-712 domain separator (name "FeedbackLog", version "2", this chain, this contract).
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
        return _records.length;
    }

    /// @notice The record of entry index; reverts IndexOutOfRange past the end.
    function recordAt(uint256 index) external view returns (Record memory) {
        uint256 n = _records.length;
        if (index >= n) revert IndexOutOfRange(index, n);
        return _records[index];
    }

    /// @notice Up to count records from start. Clamped: empty when start is past the end,
    /// shorter when fewer than count entries remain.
    function recordRange(uint256 start, uint256 count) external view returns (Record[] memory out) {
        uint256 n = _records.length;
        if (start >= n) return new Record[](0);
        uint256 left = n - start;
        if (count > left) count = left;
        out = new Record[](count);
        for (uint256 i = 0; i < count; ++i) {
            out[i] = _records[start + i];
        }
    }

    function _checkText(string calldata text) private pure {
        uint256 length = bytes(text).length;
        if (length == 0) revert EmptyText();
        if (length > MAX_TEXT) revert TextTooLong(length, MAX_TEXT);
    }

    function _append(address sender, string calldata text) private returns (uint256 id) {
        id = _records.length;
        uint64 ts = uint64(block.timestamp);
        _records.push(
            Record({
                sender: sender,
                timestamp: uint48(block.timestamp),
                blockNumber: uint48(block.number),
                textHash: keccak256(bytes(text))
            })
        );
        emit FeedbackSubmitted(id, sender, ts);
        emit FeedbackText(id, text);
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
