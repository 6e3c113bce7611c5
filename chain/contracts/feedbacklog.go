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

// FeedbackLogEntry is an auto generated low-level Go binding around an user-defined struct.
type FeedbackLogEntry struct {
	Sender    common.Address
	Timestamp uint64
	Text      string
}

// FeedbackLogMetaData contains all meta data concerning the FeedbackLog contract.
var FeedbackLogMetaData = bind.MetaData{
	ABI: "[{\"inputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"BadSignature\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"EmptyText\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"deadline\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"nowTs\",\"type\":\"uint256\"}],\"name\":\"Expired\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"index\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"count\",\"type\":\"uint256\"}],\"name\":\"IndexOutOfRange\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"uint256\",\"name\":\"expected\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"actual\",\"type\":\"uint256\"}],\"name\":\"StaleKey\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"length\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"max\",\"type\":\"uint256\"}],\"name\":\"TextTooLong\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"uint64\",\"name\":\"timestamp\",\"type\":\"uint64\"}],\"name\":\"FeedbackSubmitted\",\"type\":\"event\"},{\"inputs\":[],\"name\":\"MAX_TEXT\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"domainSeparator\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"index\",\"type\":\"uint256\"}],\"name\":\"feedbackAt\",\"outputs\":[{\"components\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"uint64\",\"name\":\"timestamp\",\"type\":\"uint64\"},{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"}],\"internalType\":\"structFeedbackLog.Entry\",\"name\":\"\",\"type\":\"tuple\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"feedbackCount\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"},{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"uint256\",\"name\":\"prev\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"deadline\",\"type\":\"uint256\"}],\"name\":\"feedbackDigest\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"start\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"count\",\"type\":\"uint256\"}],\"name\":\"feedbackRange\",\"outputs\":[{\"components\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"uint64\",\"name\":\"timestamp\",\"type\":\"uint64\"},{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"}],\"internalType\":\"structFeedbackLog.Entry[]\",\"name\":\"out\",\"type\":\"tuple[]\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"},{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"name\":\"keyStamp\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"}],\"name\":\"submitFeedback\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"},{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"uint256\",\"name\":\"prev\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"deadline\",\"type\":\"uint256\"},{\"internalType\":\"bytes\",\"name\":\"sig\",\"type\":\"bytes\"}],\"name\":\"submitFeedbackFor\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"}]",
	ID:  "FeedbackLog",
	Bin: "0x60c060405234801561000f575f5ffd5b50466080526100bb604080517f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f60208201527f0ebac01e76c3fe10d759137a7aefa050efff5e13f4666fb2b979721c0b1b83d5918101919091527fc89efdaa54c0f20c7adf612882df0950f5a951637e0307cdcb4c672f298b8bc660608201524660808201523060a08201525f9060c00160405160208183030381529060405280519060200120905090565b60a05260805160a051610f7d6100df5f395f61062b01525f6106030152610f7d5ff3fe608060405234801561000f575f5ffd5b5060043610610090575f3560e01c80637195b946116100635780637195b94614610107578063a40198351461011a578063cd1f730614610123578063e341a62314610143578063f698da2514610156575f5ffd5b80632ed3f65b146100945780635274f07a146100aa57806366b8c63e146100ca5780636f1566e6146100dd575b5f5ffd5b5f545b6040519081526020015b60405180910390f35b6100bd6100b8366004610aa3565b61015e565b6040516100a19190610b17565b6100976100d8366004610b88565b61029b565b6100976100eb366004610c21565b600160209081525f928352604080842090915290825290205481565b610097610115366004610c49565b6103c5565b61009761080081565b610136610131366004610cb0565b6103df565b6040516100a19190610cd0565b610097610151366004610d33565b6105e3565b610097610600565b60408051606080820183525f808352602083018190529282015290548083106101a9576040516394666f0d60e01b815260048101849052602481018290526044015b60405180910390fd5b5f83815481106101bb576101bb610d71565b5f91825260209182902060408051606081018252600290930290910180546001600160a01b03811684526001600160401b03600160a01b90910416938301939093526001830180549293929184019161021390610d85565b80601f016020809104026020016040519081016040528092919081815260200182805461023f90610d85565b801561028a5780601f106102615761010080835404028352916020019161028a565b820191905f5260205f20905b81548152906001019060200180831161026d57829003601f168201915b505050505081525050915050919050565b5f428410156102c65760405163aa2fd92560e01b8152600481018590524260248201526044016101a0565b6102d088886106f9565b6001600160a01b0389165f90815260016020908152604080832089845290915290205485811461032457604051630cceaeb160e01b81526004810188905260248101879052604481018290526064016101a0565b5f61033d6103368c8c8c8c8c8c61074e565b868661082e565b90508a6001600160a01b0316816001600160a01b03161461037157604051635cd5d23360e01b815260040160405180910390fd5b42604061038189821c6001610dd1565b6001600160a01b038e165f9081526001602090815260408083208e84529091529020911b9190911790556103b68b8b8b61097a565b9b9a5050505050505050505050565b5f6103d487878787878761074e565b979650505050505050565b5f5460609080841061043757604080515f808252602082019092529061042e565b60408051606080820183525f8083526020830152918101919091528152602001906001900390816104005790505b509150506105dd565b5f6104428583610df8565b905080841115610450578093505b836001600160401b0381111561046857610468610de4565b6040519080825280602002602001820160405280156104b457816020015b60408051606080820183525f8083526020830152918101919091528152602001906001900390816104865790505b5092505f5b848110156105d9575f6104cc8288610dd1565b815481106104dc576104dc610d71565b5f91825260209182902060408051606081018252600290930290910180546001600160a01b03811684526001600160401b03600160a01b90910416938301939093526001830180549293929184019161053490610d85565b80601f016020809104026020016040519081016040528092919081815260200182805461056090610d85565b80156105ab5780601f10610582576101008083540402835291602001916105ab565b820191905f5260205f20905b81548152906001019060200180831161058e57829003601f168201915b5050505050815250508482815181106105c6576105c6610d71565b60209081029190910101526001016104b9565b5050505b92915050565b5f6105ee83836106f9565b6105f933848461097a565b9392505050565b5f7f0000000000000000000000000000000000000000000000000000000000000000460361064d57507f000000000000000000000000000000000000000000000000000000000000000090565b6106f4604080517f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f60208201527f0ebac01e76c3fe10d759137a7aefa050efff5e13f4666fb2b979721c0b1b83d5918101919091527fc89efdaa54c0f20c7adf612882df0950f5a951637e0307cdcb4c672f298b8bc660608201524660808201523060a08201525f9060c00160405160208183030381529060405280519060200120905090565b905090565b805f81900361071b5760405163af943d0360e01b815260040160405180910390fd5b6108008111156107495760405163f4eb2b2d60e01b81526004810182905261080060248201526044016101a0565b505050565b5f5f7f306d651d22c0d53fb8a49ff8ad43d91881ad65e2bb1927b333363985198c124a888888604051610782929190610e0b565b6040519081900381206107cb9392918990899089906020019586526001600160a01b0394909416602086015260408501929092526060840152608083015260a082015260c00190565b6040516020818303038152906040528051906020012090506107eb610600565b60405161190160f01b6020820152602281019190915260428101829052606201604051602081830303815290604052805190602001209150509695505050505050565b5f6041821461085057604051635cd5d23360e01b815260040160405180910390fd5b8235602084013560408501355f1a601b81101561087557610872601b82610e1a565b90505b8060ff16601b1415801561088d57508060ff16601c14155b156108ab57604051635cd5d23360e01b815260040160405180910390fd5b7f7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a08211156108ec57604051635cd5d23360e01b815260040160405180910390fd5b604080515f81526020810180835289905260ff831691810191909152606081018490526080810183905260019060a0016020604051602081039080840390855afa15801561093c573d5f5f3e3d5ffd5b5050604051601f1901519450506001600160a01b03841661097057604051635cd5d23360e01b815260040160405180910390fd5b5050509392505050565b5f5f8054905090505f4290505f6040518060600160405280876001600160a01b03168152602001836001600160401b0316815260200186868080601f0160208091040260200160405190810160405280939291908181526020018383808284375f92018290525093909452505083546001818101865594825260209182902084516002909202018054928501516001600160401b0316600160a01b026001600160e01b03199093166001600160a01b03909216919091179190911781556040830151929390929083019150610a4f9082610e89565b50506040516001600160401b03831681526001600160a01b038716915083907f806036b6199ae117015ce399533b13a52858350e3bb4a976faea92756b30de719060200160405180910390a3509392505050565b5f60208284031215610ab3575f5ffd5b5035919050565b60018060a01b0381511682526001600160401b0360208201511660208301525f60408201516060604085015280518060608601528060208301608087015e5f608082870101526080601f19601f8301168601019250505092915050565b602081525f6105f96020830184610aba565b80356001600160a01b0381168114610b3f575f5ffd5b919050565b5f5f83601f840112610b54575f5ffd5b5081356001600160401b03811115610b6a575f5ffd5b602083019150836020828501011115610b81575f5ffd5b9250929050565b5f5f5f5f5f5f5f5f60c0898b031215610b9f575f5ffd5b610ba889610b29565b975060208901356001600160401b03811115610bc2575f5ffd5b610bce8b828c01610b44565b90985096505060408901359450606089013593506080890135925060a08901356001600160401b03811115610c01575f5ffd5b610c0d8b828c01610b44565b999c989b5096995094979396929594505050565b5f5f60408385031215610c32575f5ffd5b610c3b83610b29565b946020939093013593505050565b5f5f5f5f5f5f60a08789031215610c5e575f5ffd5b610c6787610b29565b955060208701356001600160401b03811115610c81575f5ffd5b610c8d89828a01610b44565b979a90995096976040810135976060820135975060809091013595509350505050565b5f5f60408385031215610cc1575f5ffd5b50508035926020909101359150565b5f602082016020835280845180835260408501915060408160051b8601019250602086015f5b82811015610d2757603f19878603018452610d12858351610aba565b94506020938401939190910190600101610cf6565b50929695505050505050565b5f5f60208385031215610d44575f5ffd5b82356001600160401b03811115610d59575f5ffd5b610d6585828601610b44565b90969095509350505050565b634e487b7160e01b5f52603260045260245ffd5b600181811c90821680610d9957607f821691505b602082108103610db757634e487b7160e01b5f52602260045260245ffd5b50919050565b634e487b7160e01b5f52601160045260245ffd5b808201808211156105dd576105dd610dbd565b634e487b7160e01b5f52604160045260245ffd5b818103818111156105dd576105dd610dbd565b818382375f9101908152919050565b60ff81811683821601908111156105dd576105dd610dbd565b601f821115610749578282111561074957805f5260205f20601f840160051c6020851015610e5e57505f5b90810190601f840160051c035f5b81811015610e81575f83820155600101610e6c565b505050505050565b81516001600160401b03811115610ea257610ea2610de4565b610eb681610eb08454610d85565b84610e33565b6020601f821160018114610ee8575f8315610ed15750848201515b5f19600385901b1c1916600184901b178455610f40565b5f84815260208120601f198516915b82811015610f175787850151825560209485019460019092019101610ef7565b5084821015610f3457868401515f19600387901b60f8161c191681555b505060018360011b0184555b505050505056fea2646970667358221220de16c8472c481f10ad6293b6f48257bf7f3a7eb7a66e3f77764c1df229309a9964736f6c63430008250033",
}

// FeedbackLog is an auto generated Go binding around an Ethereum contract.
type FeedbackLog struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *FeedbackLog) GetABI() abi.ABI {
	return c.abi
}

// NewFeedbackLog creates a new instance of FeedbackLog.
func NewFeedbackLog() *FeedbackLog {
	parsed, err := FeedbackLogMetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &FeedbackLog{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *FeedbackLog) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackMAXTEXT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa4019835.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MAX_TEXT() view returns(uint256)
func (feedbackLog *FeedbackLog) PackMAXTEXT() []byte {
	enc, err := feedbackLog.abi.Pack("MAX_TEXT")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackMAXTEXT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa4019835.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function MAX_TEXT() view returns(uint256)
func (feedbackLog *FeedbackLog) TryPackMAXTEXT() ([]byte, error) {
	return feedbackLog.abi.Pack("MAX_TEXT")
}

// UnpackMAXTEXT is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa4019835.
//
// Solidity: function MAX_TEXT() view returns(uint256)
func (feedbackLog *FeedbackLog) UnpackMAXTEXT(data []byte) (*big.Int, error) {
	out, err := feedbackLog.abi.Unpack("MAX_TEXT", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackDomainSeparator is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf698da25.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function domainSeparator() view returns(bytes32)
func (feedbackLog *FeedbackLog) PackDomainSeparator() []byte {
	enc, err := feedbackLog.abi.Pack("domainSeparator")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackDomainSeparator is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xf698da25.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function domainSeparator() view returns(bytes32)
func (feedbackLog *FeedbackLog) TryPackDomainSeparator() ([]byte, error) {
	return feedbackLog.abi.Pack("domainSeparator")
}

// UnpackDomainSeparator is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xf698da25.
//
// Solidity: function domainSeparator() view returns(bytes32)
func (feedbackLog *FeedbackLog) UnpackDomainSeparator(data []byte) ([32]byte, error) {
	out, err := feedbackLog.abi.Unpack("domainSeparator", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackFeedbackAt is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x5274f07a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function feedbackAt(uint256 index) view returns((address,uint64,string))
func (feedbackLog *FeedbackLog) PackFeedbackAt(index *big.Int) []byte {
	enc, err := feedbackLog.abi.Pack("feedbackAt", index)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackFeedbackAt is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x5274f07a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function feedbackAt(uint256 index) view returns((address,uint64,string))
func (feedbackLog *FeedbackLog) TryPackFeedbackAt(index *big.Int) ([]byte, error) {
	return feedbackLog.abi.Pack("feedbackAt", index)
}

// UnpackFeedbackAt is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x5274f07a.
//
// Solidity: function feedbackAt(uint256 index) view returns((address,uint64,string))
func (feedbackLog *FeedbackLog) UnpackFeedbackAt(data []byte) (FeedbackLogEntry, error) {
	out, err := feedbackLog.abi.Unpack("feedbackAt", data)
	if err != nil {
		return *new(FeedbackLogEntry), err
	}
	out0 := *abi.ConvertType(out[0], new(FeedbackLogEntry)).(*FeedbackLogEntry)
	return out0, nil
}

// PackFeedbackCount is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x2ed3f65b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function feedbackCount() view returns(uint256)
func (feedbackLog *FeedbackLog) PackFeedbackCount() []byte {
	enc, err := feedbackLog.abi.Pack("feedbackCount")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackFeedbackCount is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x2ed3f65b.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function feedbackCount() view returns(uint256)
func (feedbackLog *FeedbackLog) TryPackFeedbackCount() ([]byte, error) {
	return feedbackLog.abi.Pack("feedbackCount")
}

// UnpackFeedbackCount is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x2ed3f65b.
//
// Solidity: function feedbackCount() view returns(uint256)
func (feedbackLog *FeedbackLog) UnpackFeedbackCount(data []byte) (*big.Int, error) {
	out, err := feedbackLog.abi.Unpack("feedbackCount", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackFeedbackDigest is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x7195b946.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function feedbackDigest(address sender, string text, bytes32 key, uint256 prev, uint256 deadline) view returns(bytes32)
func (feedbackLog *FeedbackLog) PackFeedbackDigest(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int) []byte {
	enc, err := feedbackLog.abi.Pack("feedbackDigest", sender, text, key, prev, deadline)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackFeedbackDigest is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x7195b946.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function feedbackDigest(address sender, string text, bytes32 key, uint256 prev, uint256 deadline) view returns(bytes32)
func (feedbackLog *FeedbackLog) TryPackFeedbackDigest(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int) ([]byte, error) {
	return feedbackLog.abi.Pack("feedbackDigest", sender, text, key, prev, deadline)
}

// UnpackFeedbackDigest is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x7195b946.
//
// Solidity: function feedbackDigest(address sender, string text, bytes32 key, uint256 prev, uint256 deadline) view returns(bytes32)
func (feedbackLog *FeedbackLog) UnpackFeedbackDigest(data []byte) ([32]byte, error) {
	out, err := feedbackLog.abi.Unpack("feedbackDigest", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackFeedbackRange is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xcd1f7306.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function feedbackRange(uint256 start, uint256 count) view returns((address,uint64,string)[] out)
func (feedbackLog *FeedbackLog) PackFeedbackRange(start *big.Int, count *big.Int) []byte {
	enc, err := feedbackLog.abi.Pack("feedbackRange", start, count)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackFeedbackRange is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xcd1f7306.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function feedbackRange(uint256 start, uint256 count) view returns((address,uint64,string)[] out)
func (feedbackLog *FeedbackLog) TryPackFeedbackRange(start *big.Int, count *big.Int) ([]byte, error) {
	return feedbackLog.abi.Pack("feedbackRange", start, count)
}

// UnpackFeedbackRange is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xcd1f7306.
//
// Solidity: function feedbackRange(uint256 start, uint256 count) view returns((address,uint64,string)[] out)
func (feedbackLog *FeedbackLog) UnpackFeedbackRange(data []byte) ([]FeedbackLogEntry, error) {
	out, err := feedbackLog.abi.Unpack("feedbackRange", data)
	if err != nil {
		return *new([]FeedbackLogEntry), err
	}
	out0 := *abi.ConvertType(out[0], new([]FeedbackLogEntry)).(*[]FeedbackLogEntry)
	return out0, nil
}

// PackKeyStamp is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6f1566e6.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function keyStamp(address , bytes32 ) view returns(uint256)
func (feedbackLog *FeedbackLog) PackKeyStamp(arg0 common.Address, arg1 [32]byte) []byte {
	enc, err := feedbackLog.abi.Pack("keyStamp", arg0, arg1)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackKeyStamp is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6f1566e6.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function keyStamp(address , bytes32 ) view returns(uint256)
func (feedbackLog *FeedbackLog) TryPackKeyStamp(arg0 common.Address, arg1 [32]byte) ([]byte, error) {
	return feedbackLog.abi.Pack("keyStamp", arg0, arg1)
}

// UnpackKeyStamp is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x6f1566e6.
//
// Solidity: function keyStamp(address , bytes32 ) view returns(uint256)
func (feedbackLog *FeedbackLog) UnpackKeyStamp(data []byte) (*big.Int, error) {
	out, err := feedbackLog.abi.Unpack("keyStamp", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackSubmitFeedback is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xe341a623.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function submitFeedback(string text) returns(uint256 id)
func (feedbackLog *FeedbackLog) PackSubmitFeedback(text string) []byte {
	enc, err := feedbackLog.abi.Pack("submitFeedback", text)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSubmitFeedback is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xe341a623.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function submitFeedback(string text) returns(uint256 id)
func (feedbackLog *FeedbackLog) TryPackSubmitFeedback(text string) ([]byte, error) {
	return feedbackLog.abi.Pack("submitFeedback", text)
}

// UnpackSubmitFeedback is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xe341a623.
//
// Solidity: function submitFeedback(string text) returns(uint256 id)
func (feedbackLog *FeedbackLog) UnpackSubmitFeedback(data []byte) (*big.Int, error) {
	out, err := feedbackLog.abi.Unpack("submitFeedback", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackSubmitFeedbackFor is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x66b8c63e.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function submitFeedbackFor(address sender, string text, bytes32 key, uint256 prev, uint256 deadline, bytes sig) returns(uint256 id)
func (feedbackLog *FeedbackLog) PackSubmitFeedbackFor(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int, sig []byte) []byte {
	enc, err := feedbackLog.abi.Pack("submitFeedbackFor", sender, text, key, prev, deadline, sig)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackSubmitFeedbackFor is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x66b8c63e.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function submitFeedbackFor(address sender, string text, bytes32 key, uint256 prev, uint256 deadline, bytes sig) returns(uint256 id)
func (feedbackLog *FeedbackLog) TryPackSubmitFeedbackFor(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int, sig []byte) ([]byte, error) {
	return feedbackLog.abi.Pack("submitFeedbackFor", sender, text, key, prev, deadline, sig)
}

// UnpackSubmitFeedbackFor is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x66b8c63e.
//
// Solidity: function submitFeedbackFor(address sender, string text, bytes32 key, uint256 prev, uint256 deadline, bytes sig) returns(uint256 id)
func (feedbackLog *FeedbackLog) UnpackSubmitFeedbackFor(data []byte) (*big.Int, error) {
	out, err := feedbackLog.abi.Unpack("submitFeedbackFor", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// FeedbackLogFeedbackSubmitted represents a FeedbackSubmitted event raised by the FeedbackLog contract.
type FeedbackLogFeedbackSubmitted struct {
	Id        *big.Int
	Sender    common.Address
	Timestamp uint64
	Raw       *types.Log // Blockchain specific contextual infos
}

const FeedbackLogFeedbackSubmittedEventName = "FeedbackSubmitted"

// ContractEventName returns the user-defined event name.
func (FeedbackLogFeedbackSubmitted) ContractEventName() string {
	return FeedbackLogFeedbackSubmittedEventName
}

// UnpackFeedbackSubmittedEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event FeedbackSubmitted(uint256 indexed id, address indexed sender, uint64 timestamp)
func (feedbackLog *FeedbackLog) UnpackFeedbackSubmittedEvent(log *types.Log) (*FeedbackLogFeedbackSubmitted, error) {
	event := "FeedbackSubmitted"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != feedbackLog.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(FeedbackLogFeedbackSubmitted)
	if len(log.Data) > 0 {
		if err := feedbackLog.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range feedbackLog.abi.Events[event].Inputs {
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
func (feedbackLog *FeedbackLog) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], feedbackLog.abi.Errors["BadSignature"].ID.Bytes()[:4]) {
		return feedbackLog.UnpackBadSignatureError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLog.abi.Errors["EmptyText"].ID.Bytes()[:4]) {
		return feedbackLog.UnpackEmptyTextError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLog.abi.Errors["Expired"].ID.Bytes()[:4]) {
		return feedbackLog.UnpackExpiredError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLog.abi.Errors["IndexOutOfRange"].ID.Bytes()[:4]) {
		return feedbackLog.UnpackIndexOutOfRangeError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLog.abi.Errors["StaleKey"].ID.Bytes()[:4]) {
		return feedbackLog.UnpackStaleKeyError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLog.abi.Errors["TextTooLong"].ID.Bytes()[:4]) {
		return feedbackLog.UnpackTextTooLongError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// FeedbackLogBadSignature represents a BadSignature error raised by the FeedbackLog contract.
type FeedbackLogBadSignature struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error BadSignature()
func FeedbackLogBadSignatureErrorID() common.Hash {
	return common.HexToHash("0x5cd5d2335541c4f2ed05fbe44f397e8b79f8e2333157122d2dab06e378ef7685")
}

// UnpackBadSignatureError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error BadSignature()
func (feedbackLog *FeedbackLog) UnpackBadSignatureError(raw []byte) (*FeedbackLogBadSignature, error) {
	out := new(FeedbackLogBadSignature)
	if err := feedbackLog.abi.UnpackIntoInterface(out, "BadSignature", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogEmptyText represents a EmptyText error raised by the FeedbackLog contract.
type FeedbackLogEmptyText struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error EmptyText()
func FeedbackLogEmptyTextErrorID() common.Hash {
	return common.HexToHash("0xaf943d03f8281dbf201ebc998526a6c0fc81c9e6fc8d20447b450157472cbe19")
}

// UnpackEmptyTextError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error EmptyText()
func (feedbackLog *FeedbackLog) UnpackEmptyTextError(raw []byte) (*FeedbackLogEmptyText, error) {
	out := new(FeedbackLogEmptyText)
	if err := feedbackLog.abi.UnpackIntoInterface(out, "EmptyText", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogExpired represents a Expired error raised by the FeedbackLog contract.
type FeedbackLogExpired struct {
	Deadline *big.Int
	NowTs    *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error Expired(uint256 deadline, uint256 nowTs)
func FeedbackLogExpiredErrorID() common.Hash {
	return common.HexToHash("0xaa2fd9251337aad6985148406aafbb40098cf60c4d20af54767f17b944074845")
}

// UnpackExpiredError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error Expired(uint256 deadline, uint256 nowTs)
func (feedbackLog *FeedbackLog) UnpackExpiredError(raw []byte) (*FeedbackLogExpired, error) {
	out := new(FeedbackLogExpired)
	if err := feedbackLog.abi.UnpackIntoInterface(out, "Expired", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogIndexOutOfRange represents a IndexOutOfRange error raised by the FeedbackLog contract.
type FeedbackLogIndexOutOfRange struct {
	Index *big.Int
	Count *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error IndexOutOfRange(uint256 index, uint256 count)
func FeedbackLogIndexOutOfRangeErrorID() common.Hash {
	return common.HexToHash("0x94666f0d776338bf3dc0d578dde468fba3b7901915ee98978704643d741cc12d")
}

// UnpackIndexOutOfRangeError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error IndexOutOfRange(uint256 index, uint256 count)
func (feedbackLog *FeedbackLog) UnpackIndexOutOfRangeError(raw []byte) (*FeedbackLogIndexOutOfRange, error) {
	out := new(FeedbackLogIndexOutOfRange)
	if err := feedbackLog.abi.UnpackIntoInterface(out, "IndexOutOfRange", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogStaleKey represents a StaleKey error raised by the FeedbackLog contract.
type FeedbackLogStaleKey struct {
	Key      [32]byte
	Expected *big.Int
	Actual   *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error StaleKey(bytes32 key, uint256 expected, uint256 actual)
func FeedbackLogStaleKeyErrorID() common.Hash {
	return common.HexToHash("0x0cceaeb16c8ac2153700d56d556d175d34b298d93e463dffe85536422418f674")
}

// UnpackStaleKeyError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error StaleKey(bytes32 key, uint256 expected, uint256 actual)
func (feedbackLog *FeedbackLog) UnpackStaleKeyError(raw []byte) (*FeedbackLogStaleKey, error) {
	out := new(FeedbackLogStaleKey)
	if err := feedbackLog.abi.UnpackIntoInterface(out, "StaleKey", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogTextTooLong represents a TextTooLong error raised by the FeedbackLog contract.
type FeedbackLogTextTooLong struct {
	Length *big.Int
	Max    *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error TextTooLong(uint256 length, uint256 max)
func FeedbackLogTextTooLongErrorID() common.Hash {
	return common.HexToHash("0xf4eb2b2dbe319380c840209258eb848c417097b3e21292e1f63f878c9e784194")
}

// UnpackTextTooLongError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error TextTooLong(uint256 length, uint256 max)
func (feedbackLog *FeedbackLog) UnpackTextTooLongError(raw []byte) (*FeedbackLogTextTooLong, error) {
	out := new(FeedbackLogTextTooLong)
	if err := feedbackLog.abi.UnpackIntoInterface(out, "TextTooLong", raw); err != nil {
		return nil, err
	}
	return out, nil
}
