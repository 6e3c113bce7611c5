// Code generated via abigen V2 - DO NOT EDIT.
// This file is a generated binding and any manual changes will be lost.

package contracts

import (
	"bytes"
	"errors"
	"math/big"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
)

// Reference imports to suppress errors if they are not otherwise used.
var (
	_ = bytes.Equal
	_ = errors.New
	_ = big.NewInt
	_ = common.Big1
	_ = types.BloomLookup
	_ = abi.ConvertType
)

// NameRegistryMetaData contains all meta data concerning the NameRegistry contract.
var NameRegistryMetaData = bind.MetaData{
	ABI: "[{\"inputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"EmptyName\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"}],\"name\":\"NameTaken\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"}],\"name\":\"NoSuchName\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"caller\",\"type\":\"address\"}],\"name\":\"NotAdmin\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"},{\"internalType\":\"address\",\"name\":\"caller\",\"type\":\"address\"}],\"name\":\"NotOwner\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroOwner\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":false,\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"},{\"indexed\":true,\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"}],\"name\":\"MetadataSet\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"address\",\"name\":\"previousOwner\",\"type\":\"address\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"newOwner\",\"type\":\"address\"}],\"name\":\"OwnershipTransferred\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":false,\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"owner\",\"type\":\"address\"}],\"name\":\"Registered\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":false,\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"owner\",\"type\":\"address\"}],\"name\":\"Released\",\"type\":\"event\"},{\"inputs\":[{\"internalType\":\"string[]\",\"name\":\"names\",\"type\":\"string[]\"}],\"name\":\"adminBurn\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"adminResetAll\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"},{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"}],\"name\":\"metadata\",\"outputs\":[{\"internalType\":\"bytes\",\"name\":\"\",\"type\":\"bytes\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"nameCount\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"owner\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"}],\"name\":\"ownerOf\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"}],\"name\":\"register\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"}],\"name\":\"release\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"name\",\"type\":\"string\"},{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"bytes\",\"name\":\"value\",\"type\":\"bytes\"}],\"name\":\"setMetadata\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"newOwner\",\"type\":\"address\"}],\"name\":\"transferOwnership\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"}]",
	ID:  "NameRegistry",
	Bin: "0x6080604052348015600e575f5ffd5b505f80546001600160a01b0319163390811782556040519091907f8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e0908290a3610fde8061005a5f395ff3fe608060405234801561000f575f5ffd5b506004361061009b575f3560e01c8063951391d611610063578063951391d61461012057806395b15eb214610133578063f2c298be14610146578063f2fde38b14610159578063f34e37231461016c575f5ffd5b806312597def1461009f57806320d13b8e146100a957806373ff93a2146100d25780638da5cb5b146100e3578063920ffa261461010d575b5f5ffd5b6100a761017f565b005b6100bc6100b7366004610a7f565b610285565b6040516100c99190610af5565b60405180910390f35b6004546040519081526020016100c9565b5f546100f5906001600160a01b031681565b6040516001600160a01b0390911681526020016100c9565b6100f561011b366004610b07565b61038f565b6100a761012e366004610b46565b6103ce565b6100a7610141366004610bb7565b6104d1565b6100a7610154366004610b07565b610554565b6100a7610167366004610c30565b61067b565b6100a761017a366004610b07565b610727565b5f546001600160a01b031633146101b057604051630bd4212160e11b81523360048201526024015b60405180910390fd5b6004541561028357600480545f91906101cb90600190610c6a565b815481106101db576101db610c7d565b905f5260205f200180546101ee90610c91565b80601f016020809104026020016040519081016040528092919081815260200182805461021a90610c91565b80156102655780601f1061023c57610100808354040283529160200191610265565b820191905f5260205f20905b81548152906001019060200180831161024857829003601f168201915b5050505050905061027d818280519060200120610774565b506101b0565b565b60605f8484604051610298929190610cc9565b60408051918290039091205f818152600160205291909120549091506001600160a01b03166102d657505060408051602081019091525f8152610388565b5f8181526003602090815260408083206002835281842054845282528083208684529091529020805461030890610c91565b80601f016020809104026020016040519081016040528092919081815260200182805461033490610c91565b801561037f5780601f106103565761010080835404028352916020019161037f565b820191905f5260205f20905b81548152906001019060200180831161036257829003601f168201915b50505050509150505b9392505050565b5f60015f84846040516103a3929190610cc9565b604080519182900390912082526020820192909252015f20546001600160a01b031690505b92915050565b5f546001600160a01b031633146103fa57604051630bd4212160e11b81523360048201526024016101a7565b5f5b818110156104cc575f83838381811061041757610417610c7d565b90506020028101906104299190610cd8565b604051610437929190610cc9565b60408051918290039091205f818152600160205291909120549091506001600160a01b0316156104c3576104c384848481811061047657610476610c7d565b90506020028101906104889190610cd8565b8080601f0160208091040260200160405190810160405280939291908181526020018383808284375f92019190915250859250610774915050565b506001016103fc565b505050565b5f6104dc8686610966565b5f8181526003602090815260408083206002835281842054845282528083208884529091529020909150610511838583610d85565b50837f3650c4d2f3061e136a02e2c039376cd6ce0d575fbc8c72a89c53198447d762b08787604051610544929190610e68565b60405180910390a2505050505050565b5f81900361057557604051632ef1310560e01b815260040160405180910390fd5b5f8282604051610586929190610cc9565b60408051918290039091205f818152600160205291909120549091506001600160a01b0316156105cd5782826040516335fee77d60e01b81526004016101a7929190610e68565b5f818152600160208190526040822080546001600160a01b031916331790556004805491820181559091527f8a35acfbc15ff81a39ae7d344fd709f28e8600b4aa8c65c6b64bfe7fe36bd19b01610625838583610d85565b506004545f8281526005602052604090819020919091555133907f50f74ca45caac8020b8d891bd13ea5a2d79564986ee6a839f0d914896388322d9061066e9086908690610e68565b60405180910390a2505050565b5f546001600160a01b031633146106a757604051630bd4212160e11b81523360048201526024016101a7565b6001600160a01b0381166106ce57604051639905827b60e01b815260040160405180910390fd5b5f80546040516001600160a01b03808516939216917f8be0079c531659141344cd1fd0a4f28419497f9722a3daafe3b4186f6b6457e091a35f80546001600160a01b0319166001600160a01b0392909216919091179055565b5f6107328383610966565b90506104cc83838080601f0160208091040260200160405190810160405280939291908181526020018383808284375f92019190915250859250610774915050565b5f81815260016020908152604080832080546001600160a01b031981169091556002909252822080546001600160a01b039092169290916107b490610e83565b909155505f828152600560205260408120546107d290600190610c6a565b6004549091505f906107e690600190610c6a565b90508082146108e0575f6004828154811061080357610803610c7d565b905f5260205f2001805461081690610c91565b80601f016020809104026020016040519081016040528092919081815260200182805461084290610c91565b801561088d5780601f106108645761010080835404028352916020019161088d565b820191905f5260205f20905b81548152906001019060200180831161087057829003601f168201915b5050505050905080600484815481106108a8576108a8610c7d565b905f5260205f200190816108bc9190610e9b565b506108c8836001610f56565b81516020928301205f90815260059092526040909120555b60048054806108f1576108f1610f69565b600190038181905f5260205f20015f61090a91906109f4565b90555f8481526005602052604080822091909155516001600160a01b038416907f651316003834ad80abb02e96408414e47c3b8cfd10e8ea1a6e339abe9e089b6090610957908890610af5565b60405180910390a25050505050565b5f8282604051610977929190610cc9565b60408051918290039091205f818152600160205291909120549091506001600160a01b0316806109be5783836040516385b185d960e01b81526004016101a7929190610e68565b6001600160a01b03811633146109ed57838333604051630b6fb5bd60e41b81526004016101a793929190610f7d565b5092915050565b508054610a0090610c91565b5f825580601f10610a0f575050565b601f0160209004905f5260205f209061028391905f5b808211156104cc575f81840155600101610a25565b5f5f83601f840112610a4a575f5ffd5b50813567ffffffffffffffff811115610a61575f5ffd5b602083019150836020828501011115610a78575f5ffd5b9250929050565b5f5f5f60408486031215610a91575f5ffd5b833567ffffffffffffffff811115610aa7575f5ffd5b610ab386828701610a3a565b909790965060209590950135949350505050565b5f81518084528060208401602086015e5f602082860101526020601f19601f83011685010191505092915050565b602081525f6103886020830184610ac7565b5f5f60208385031215610b18575f5ffd5b823567ffffffffffffffff811115610b2e575f5ffd5b610b3a85828601610a3a565b90969095509350505050565b5f5f60208385031215610b57575f5ffd5b823567ffffffffffffffff811115610b6d575f5ffd5b8301601f81018513610b7d575f5ffd5b803567ffffffffffffffff811115610b93575f5ffd5b8560208260051b8401011115610ba7575f5ffd5b6020919091019590945092505050565b5f5f5f5f5f60608688031215610bcb575f5ffd5b853567ffffffffffffffff811115610be1575f5ffd5b610bed88828901610a3a565b90965094505060208601359250604086013567ffffffffffffffff811115610c13575f5ffd5b610c1f88828901610a3a565b969995985093965092949392505050565b5f60208284031215610c40575f5ffd5b81356001600160a01b0381168114610388575f5ffd5b634e487b7160e01b5f52601160045260245ffd5b818103818111156103c8576103c8610c56565b634e487b7160e01b5f52603260045260245ffd5b600181811c90821680610ca557607f821691505b602082108103610cc357634e487b7160e01b5f52602260045260245ffd5b50919050565b818382375f9101908152919050565b5f5f8335601e19843603018112610ced575f5ffd5b83018035915067ffffffffffffffff821115610d07575f5ffd5b602001915036819003821315610a78575f5ffd5b634e487b7160e01b5f52604160045260245ffd5b601f8211156104cc57828211156104cc57805f5260205f20601f840160051c6020851015610d5a57505f5b90810190601f840160051c035f5b81811015610d7d575f83820155600101610d68565b505050505050565b67ffffffffffffffff831115610d9d57610d9d610d1b565b610db183610dab8354610c91565b83610d2f565b5f601f841160018114610de2575f8515610dcb5750838201355b5f19600387901b1c1916600186901b178355610e39565b5f83815260208120601f198716915b82811015610e115786850135825560209485019460019092019101610df1565b5086821015610e2d575f1960f88860031b161c19848701351681555b505060018560011b0183555b5050505050565b81835281816020850137505f828201602090810191909152601f909101601f19169091010190565b602081525f610e7b602083018486610e40565b949350505050565b5f60018201610e9457610e94610c56565b5060010190565b815167ffffffffffffffff811115610eb557610eb5610d1b565b610ec981610ec38454610c91565b84610d2f565b6020601f821160018114610efb575f8315610ee45750848201515b5f19600385901b1c1916600184901b178455610e39565b5f84815260208120601f198516915b82811015610f2a5787850151825560209485019460019092019101610f0a565b5084821015610f4757868401515f19600387901b60f8161c191681555b50505050600190811b01905550565b808201808211156103c8576103c8610c56565b634e487b7160e01b5f52603160045260245ffd5b604081525f610f90604083018587610e40565b905060018060a01b038316602083015294935050505056fea2646970667358221220a4edaf91fea36cd03f9456dc742c8d545866ad27f8c58077f1019a5d892b77c864736f6c63430008250033",
}

// NameRegistry is an auto generated Go binding around an Ethereum contract.
type NameRegistry struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *NameRegistry) GetABI() abi.ABI {
	return c.abi
}

// NewNameRegistry creates a new instance of NameRegistry.
func NewNameRegistry() *NameRegistry {
	parsed, err := NameRegistryMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &NameRegistry{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *NameRegistry) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackAdminBurn is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x951391d6.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function adminBurn(string[] names) returns()
func (nameRegistry *NameRegistry) PackAdminBurn(names []string) []byte {
	enc, err := nameRegistry.abi.Pack("adminBurn", names)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackAdminBurn is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x951391d6.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function adminBurn(string[] names) returns()
func (nameRegistry *NameRegistry) TryPackAdminBurn(names []string) ([]byte, error) {
	return nameRegistry.abi.Pack("adminBurn", names)
}

// PackAdminResetAll is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x12597def.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function adminResetAll() returns()
func (nameRegistry *NameRegistry) PackAdminResetAll() []byte {
	enc, err := nameRegistry.abi.Pack("adminResetAll")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackAdminResetAll is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x12597def.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function adminResetAll() returns()
func (nameRegistry *NameRegistry) TryPackAdminResetAll() ([]byte, error) {
	return nameRegistry.abi.Pack("adminResetAll")
}

// PackMetadata is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x20d13b8e.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function metadata(string name, bytes32 key) view returns(bytes)
func (nameRegistry *NameRegistry) PackMetadata(name string, key [32]byte) []byte {
	enc, err := nameRegistry.abi.Pack("metadata", name, key)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMetadata is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x20d13b8e.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function metadata(string name, bytes32 key) view returns(bytes)
func (nameRegistry *NameRegistry) TryPackMetadata(name string, key [32]byte) ([]byte, error) {
	return nameRegistry.abi.Pack("metadata", name, key)
}

// UnpackMetadata is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x20d13b8e.
//
// Solidity: function metadata(string name, bytes32 key) view returns(bytes)
func (nameRegistry *NameRegistry) UnpackMetadata(data []byte) ([]byte, error) {
	out, err := nameRegistry.abi.Unpack("metadata", data)
	if err != nil {
		return *new([]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([]byte)).(*[]byte)
	return out0, nil
}

// PackNameCount is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x73ff93a2.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function nameCount() view returns(uint256)
func (nameRegistry *NameRegistry) PackNameCount() []byte {
	enc, err := nameRegistry.abi.Pack("nameCount")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackNameCount is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x73ff93a2.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function nameCount() view returns(uint256)
func (nameRegistry *NameRegistry) TryPackNameCount() ([]byte, error) {
	return nameRegistry.abi.Pack("nameCount")
}

// UnpackNameCount is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x73ff93a2.
//
// Solidity: function nameCount() view returns(uint256)
func (nameRegistry *NameRegistry) UnpackNameCount(data []byte) (*big.Int, error) {
	out, err := nameRegistry.abi.Unpack("nameCount", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackOwner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8da5cb5b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function owner() view returns(address)
func (nameRegistry *NameRegistry) PackOwner() []byte {
	enc, err := nameRegistry.abi.Pack("owner")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackOwner is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x8da5cb5b.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function owner() view returns(address)
func (nameRegistry *NameRegistry) TryPackOwner() ([]byte, error) {
	return nameRegistry.abi.Pack("owner")
}

// UnpackOwner is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x8da5cb5b.
//
// Solidity: function owner() view returns(address)
func (nameRegistry *NameRegistry) UnpackOwner(data []byte) (common.Address, error) {
	out, err := nameRegistry.abi.Unpack("owner", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

// PackOwnerOf is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x920ffa26.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function ownerOf(string name) view returns(address)
func (nameRegistry *NameRegistry) PackOwnerOf(name string) []byte {
	enc, err := nameRegistry.abi.Pack("ownerOf", name)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackOwnerOf is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x920ffa26.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function ownerOf(string name) view returns(address)
func (nameRegistry *NameRegistry) TryPackOwnerOf(name string) ([]byte, error) {
	return nameRegistry.abi.Pack("ownerOf", name)
}

// UnpackOwnerOf is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x920ffa26.
//
// Solidity: function ownerOf(string name) view returns(address)
func (nameRegistry *NameRegistry) UnpackOwnerOf(data []byte) (common.Address, error) {
	out, err := nameRegistry.abi.Unpack("ownerOf", data)
	if err != nil {
		return *new(common.Address), err
	}
	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)
	return out0, nil
}

// PackRegister is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf2c298be.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function register(string name) returns()
func (nameRegistry *NameRegistry) PackRegister(name string) []byte {
	enc, err := nameRegistry.abi.Pack("register", name)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackRegister is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf2c298be.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function register(string name) returns()
func (nameRegistry *NameRegistry) TryPackRegister(name string) ([]byte, error) {
	return nameRegistry.abi.Pack("register", name)
}

// PackRelease is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf34e3723.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function release(string name) returns()
func (nameRegistry *NameRegistry) PackRelease(name string) []byte {
	enc, err := nameRegistry.abi.Pack("release", name)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackRelease is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf34e3723.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function release(string name) returns()
func (nameRegistry *NameRegistry) TryPackRelease(name string) ([]byte, error) {
	return nameRegistry.abi.Pack("release", name)
}

// PackSetMetadata is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x95b15eb2.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function setMetadata(string name, bytes32 key, bytes value) returns()
func (nameRegistry *NameRegistry) PackSetMetadata(name string, key [32]byte, value []byte) []byte {
	enc, err := nameRegistry.abi.Pack("setMetadata", name, key, value)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSetMetadata is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x95b15eb2.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function setMetadata(string name, bytes32 key, bytes value) returns()
func (nameRegistry *NameRegistry) TryPackSetMetadata(name string, key [32]byte, value []byte) ([]byte, error) {
	return nameRegistry.abi.Pack("setMetadata", name, key, value)
}

// PackTransferOwnership is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf2fde38b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function transferOwnership(address newOwner) returns()
func (nameRegistry *NameRegistry) PackTransferOwnership(newOwner common.Address) []byte {
	enc, err := nameRegistry.abi.Pack("transferOwnership", newOwner)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackTransferOwnership is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf2fde38b.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function transferOwnership(address newOwner) returns()
func (nameRegistry *NameRegistry) TryPackTransferOwnership(newOwner common.Address) ([]byte, error) {
	return nameRegistry.abi.Pack("transferOwnership", newOwner)
}

// NameRegistryMetadataSet represents a MetadataSet event raised by the NameRegistry contract.
type NameRegistryMetadataSet struct {
	Name string
	Key  [32]byte
	Raw  *types.Log // Blockchain specific contextual infos
}

const NameRegistryMetadataSetEventName = "MetadataSet"

// ContractEventName returns the user-defined event name.
func (NameRegistryMetadataSet) ContractEventName() string {
	return NameRegistryMetadataSetEventName
}

// UnpackMetadataSetEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event MetadataSet(string name, bytes32 indexed key)
func (nameRegistry *NameRegistry) UnpackMetadataSetEvent(log *types.Log) (*NameRegistryMetadataSet, error) {
	event := "MetadataSet"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != nameRegistry.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(NameRegistryMetadataSet)
	if len(log.Data) > 0 {
		if err := nameRegistry.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range nameRegistry.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// NameRegistryOwnershipTransferred represents a OwnershipTransferred event raised by the NameRegistry contract.
type NameRegistryOwnershipTransferred struct {
	PreviousOwner common.Address
	NewOwner      common.Address
	Raw           *types.Log // Blockchain specific contextual infos
}

const NameRegistryOwnershipTransferredEventName = "OwnershipTransferred"

// ContractEventName returns the user-defined event name.
func (NameRegistryOwnershipTransferred) ContractEventName() string {
	return NameRegistryOwnershipTransferredEventName
}

// UnpackOwnershipTransferredEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)
func (nameRegistry *NameRegistry) UnpackOwnershipTransferredEvent(log *types.Log) (*NameRegistryOwnershipTransferred, error) {
	event := "OwnershipTransferred"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != nameRegistry.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(NameRegistryOwnershipTransferred)
	if len(log.Data) > 0 {
		if err := nameRegistry.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range nameRegistry.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// NameRegistryRegistered represents a Registered event raised by the NameRegistry contract.
type NameRegistryRegistered struct {
	Name  string
	Owner common.Address
	Raw   *types.Log // Blockchain specific contextual infos
}

const NameRegistryRegisteredEventName = "Registered"

// ContractEventName returns the user-defined event name.
func (NameRegistryRegistered) ContractEventName() string {
	return NameRegistryRegisteredEventName
}

// UnpackRegisteredEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event Registered(string name, address indexed owner)
func (nameRegistry *NameRegistry) UnpackRegisteredEvent(log *types.Log) (*NameRegistryRegistered, error) {
	event := "Registered"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != nameRegistry.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(NameRegistryRegistered)
	if len(log.Data) > 0 {
		if err := nameRegistry.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range nameRegistry.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// NameRegistryReleased represents a Released event raised by the NameRegistry contract.
type NameRegistryReleased struct {
	Name  string
	Owner common.Address
	Raw   *types.Log // Blockchain specific contextual infos
}

const NameRegistryReleasedEventName = "Released"

// ContractEventName returns the user-defined event name.
func (NameRegistryReleased) ContractEventName() string {
	return NameRegistryReleasedEventName
}

// UnpackReleasedEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event Released(string name, address indexed owner)
func (nameRegistry *NameRegistry) UnpackReleasedEvent(log *types.Log) (*NameRegistryReleased, error) {
	event := "Released"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != nameRegistry.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(NameRegistryReleased)
	if len(log.Data) > 0 {
		if err := nameRegistry.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range nameRegistry.abi.Events[event].Inputs {
		if arg.Indexed {
			indexed = append(indexed, arg)
		}
	}
	if err := abi.ParseTopics(out, indexed, log.Topics[1:]); err != nil {
		return nil, err
	}
	out.Raw = log
	return out, nil
}

// UnpackError attempts to decode the provided error data using user-defined
// error definitions.
func (nameRegistry *NameRegistry) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], nameRegistry.abi.Errors["EmptyName"].ID.Bytes()[:4]) {
		return nameRegistry.UnpackEmptyNameError(raw[4:])
	}
	if bytes.Equal(raw[:4], nameRegistry.abi.Errors["NameTaken"].ID.Bytes()[:4]) {
		return nameRegistry.UnpackNameTakenError(raw[4:])
	}
	if bytes.Equal(raw[:4], nameRegistry.abi.Errors["NoSuchName"].ID.Bytes()[:4]) {
		return nameRegistry.UnpackNoSuchNameError(raw[4:])
	}
	if bytes.Equal(raw[:4], nameRegistry.abi.Errors["NotAdmin"].ID.Bytes()[:4]) {
		return nameRegistry.UnpackNotAdminError(raw[4:])
	}
	if bytes.Equal(raw[:4], nameRegistry.abi.Errors["NotOwner"].ID.Bytes()[:4]) {
		return nameRegistry.UnpackNotOwnerError(raw[4:])
	}
	if bytes.Equal(raw[:4], nameRegistry.abi.Errors["ZeroOwner"].ID.Bytes()[:4]) {
		return nameRegistry.UnpackZeroOwnerError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// NameRegistryEmptyName represents a EmptyName error raised by the NameRegistry contract.
type NameRegistryEmptyName struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error EmptyName()
func NameRegistryEmptyNameErrorID() common.Hash {
	return common.HexToHash("0x2ef131051921ac1500c097e497a691f596827ccfeb2703bc406b6c5e1fd0bb26")
}

// UnpackEmptyNameError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error EmptyName()
func (nameRegistry *NameRegistry) UnpackEmptyNameError(raw []byte) (*NameRegistryEmptyName, error) {
	out := new(NameRegistryEmptyName)
	if err := nameRegistry.abi.UnpackIntoInterface(out, "EmptyName", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// NameRegistryNameTaken represents a NameTaken error raised by the NameRegistry contract.
type NameRegistryNameTaken struct {
	Name string
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NameTaken(string name)
func NameRegistryNameTakenErrorID() common.Hash {
	return common.HexToHash("0x35fee77d3c9332caae25c497ed4e05b2cab7663c82525efe9dfdec6c5294c405")
}

// UnpackNameTakenError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NameTaken(string name)
func (nameRegistry *NameRegistry) UnpackNameTakenError(raw []byte) (*NameRegistryNameTaken, error) {
	out := new(NameRegistryNameTaken)
	if err := nameRegistry.abi.UnpackIntoInterface(out, "NameTaken", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// NameRegistryNoSuchName represents a NoSuchName error raised by the NameRegistry contract.
type NameRegistryNoSuchName struct {
	Name string
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NoSuchName(string name)
func NameRegistryNoSuchNameErrorID() common.Hash {
	return common.HexToHash("0x85b185d9dc3b8a88f0c10cfdb2e027395c9f062c4f1dce757b23186f7da9ec8a")
}

// UnpackNoSuchNameError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NoSuchName(string name)
func (nameRegistry *NameRegistry) UnpackNoSuchNameError(raw []byte) (*NameRegistryNoSuchName, error) {
	out := new(NameRegistryNoSuchName)
	if err := nameRegistry.abi.UnpackIntoInterface(out, "NoSuchName", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// NameRegistryNotAdmin represents a NotAdmin error raised by the NameRegistry contract.
type NameRegistryNotAdmin struct {
	Caller common.Address
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NotAdmin(address caller)
func NameRegistryNotAdminErrorID() common.Hash {
	return common.HexToHash("0x17a8424239494df835a470bd5e48f10a94b5febfef662a1917fe31decebbedeb")
}

// UnpackNotAdminError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NotAdmin(address caller)
func (nameRegistry *NameRegistry) UnpackNotAdminError(raw []byte) (*NameRegistryNotAdmin, error) {
	out := new(NameRegistryNotAdmin)
	if err := nameRegistry.abi.UnpackIntoInterface(out, "NotAdmin", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// NameRegistryNotOwner represents a NotOwner error raised by the NameRegistry contract.
type NameRegistryNotOwner struct {
	Name   string
	Caller common.Address
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error NotOwner(string name, address caller)
func NameRegistryNotOwnerErrorID() common.Hash {
	return common.HexToHash("0xb6fb5bd053275e600b37abfab091275e4e3667e3d6f07aee59590678bba06158")
}

// UnpackNotOwnerError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error NotOwner(string name, address caller)
func (nameRegistry *NameRegistry) UnpackNotOwnerError(raw []byte) (*NameRegistryNotOwner, error) {
	out := new(NameRegistryNotOwner)
	if err := nameRegistry.abi.UnpackIntoInterface(out, "NotOwner", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// NameRegistryZeroOwner represents a ZeroOwner error raised by the NameRegistry contract.
type NameRegistryZeroOwner struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error ZeroOwner()
func NameRegistryZeroOwnerErrorID() common.Hash {
	return common.HexToHash("0x9905827b514da707a2fe590832730f62a8d762cc0f2ba71de8065112256c3068")
}

// UnpackZeroOwnerError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error ZeroOwner()
func (nameRegistry *NameRegistry) UnpackZeroOwnerError(raw []byte) (*NameRegistryZeroOwner, error) {
	out := new(NameRegistryZeroOwner)
	if err := nameRegistry.abi.UnpackIntoInterface(out, "ZeroOwner", raw); err != nil {
		return nil, err
	}
	return out, nil
}
