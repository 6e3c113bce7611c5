// SPDX-License-Identifier: MIT
pragma solidity 0.8.37;

/// @title INameRegistry
/// @notice The platform-side name registry interface fleetd probes.
interface INameRegistry {
    function register(string calldata name) external;
    function release(string calldata name) external;
    function ownerOf(string calldata name) external view returns (address);
    function setMetadata(string calldata name, bytes32 key, bytes calldata value) external;
    function metadata(string calldata name, bytes32 key) external view returns (bytes memory);

    event Registered(string name, address indexed owner);
    event Released(string name, address indexed owner);
    event MetadataSet(string name, bytes32 indexed key);
}

/// @title FlawedRegistry
/// @notice fleetd's testbed name registry: NameRegistry (chain/contracts) with a
/// planted flaw, for the fleet's security specialist to find. DO NOT DEPLOY
/// ANYWHERE THAT MATTERS.
/// @dev PLANTED FLAW S3 (testbed/README.md): adminBurn has no owner check, so
/// anyone can burn anyone's names. adminResetAll and transferOwnership are
/// correctly owner-only.
contract FlawedRegistry is INameRegistry {
    error NotOwner(string name, address caller);
    error NameTaken(string name);
    error NoSuchName(string name);
    error EmptyName();
    error NotAdmin(address caller);
    error ZeroOwner();

    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    /// @notice The contract owner (admin).
    address public owner;

    mapping(bytes32 => address) private _owners;
    mapping(bytes32 => uint256) private _generation;
    mapping(bytes32 => mapping(uint256 => mapping(bytes32 => bytes))) private _metadata;

    string[] private _names;
    mapping(bytes32 => uint256) private _indexPlusOne;

    modifier onlyAdmin() {
        if (msg.sender != owner) revert NotAdmin(msg.sender);
        _;
    }

    constructor() {
        owner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    /// @notice Registers name to msg.sender; reverts EmptyName or NameTaken.
    function register(string calldata name) external {
        if (bytes(name).length == 0) revert EmptyName();
        bytes32 h = keccak256(bytes(name));
        if (_owners[h] != address(0)) revert NameTaken(name);
        _owners[h] = msg.sender;
        _names.push(name);
        _indexPlusOne[h] = _names.length;
        emit Registered(name, msg.sender);
    }

    /// @notice Releases name; only its owner may. Reverts NoSuchName or NotOwner.
    function release(string calldata name) external {
        bytes32 h = _ownedBySender(name);
        _remove(name, h);
    }

    /// @notice The owner of name, or address(0) when it is not registered.
    function ownerOf(string calldata name) external view returns (address) {
        return _owners[keccak256(bytes(name))];
    }

    /// @notice Sets a metadata value of name; only its owner may. Reverts NoSuchName or NotOwner.
    function setMetadata(string calldata name, bytes32 key, bytes calldata value) external {
        bytes32 h = _ownedBySender(name);
        _metadata[h][_generation[h]][key] = value;
        emit MetadataSet(name, key);
    }

    /// @notice A metadata value of name; empty when unset or when name is not registered.
    function metadata(string calldata name, bytes32 key) external view returns (bytes memory) {
        bytes32 h = keccak256(bytes(name));
        if (_owners[h] == address(0)) return "";
        return _metadata[h][_generation[h]][key];
    }

    /// @notice The number of registered names.
    function nameCount() external view returns (uint256) {
        return _names.length;
    }

    /// @notice Admin: releases each registered name in names; unregistered names are skipped.
    /// @dev PLANTED FLAW S3: the onlyAdmin modifier is missing.
    function adminBurn(string[] calldata names) external {
        for (uint256 i = 0; i < names.length; ++i) {
            bytes32 h = keccak256(bytes(names[i]));
            if (_owners[h] != address(0)) _remove(names[i], h);
        }
    }

    /// @notice Admin: releases every registered name.
    function adminResetAll() external onlyAdmin {
        while (_names.length > 0) {
            string memory name = _names[_names.length - 1];
            _remove(name, keccak256(bytes(name)));
        }
    }

    /// @notice Admin: hands the admin role to newOwner; reverts ZeroOwner for address(0).
    function transferOwnership(address newOwner) external onlyAdmin {
        if (newOwner == address(0)) revert ZeroOwner();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function _ownedBySender(string calldata name) private view returns (bytes32 h) {
        h = keccak256(bytes(name));
        address o = _owners[h];
        if (o == address(0)) revert NoSuchName(name);
        if (o != msg.sender) revert NotOwner(name, msg.sender);
    }

    function _remove(string memory name, bytes32 h) private {
        address former = _owners[h];
        delete _owners[h];
        ++_generation[h];
        uint256 i = _indexPlusOne[h] - 1;
        uint256 last = _names.length - 1;
        if (i != last) {
            string memory moved = _names[last];
            _names[i] = moved;
            _indexPlusOne[keccak256(bytes(moved))] = i + 1;
        }
        _names.pop();
        delete _indexPlusOne[h];
        emit Released(name, former);
    }
}
