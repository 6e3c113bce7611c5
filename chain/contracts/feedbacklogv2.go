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

// FeedbackLogV2Record is an auto generated low-level Go binding around an user-defined struct.
type FeedbackLogV2Record struct {
	Sender      common.Address
	Timestamp   *big.Int
	BlockNumber *big.Int
	TextHash    [32]byte
}

// FeedbackLogV2MetaData contains all meta data concerning the FeedbackLogV2 contract.
var FeedbackLogV2MetaData = bind.MetaData{
	ABI: "[{\"inputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"BadSignature\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"EmptyText\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"deadline\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"nowTs\",\"type\":\"uint256\"}],\"name\":\"Expired\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"index\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"count\",\"type\":\"uint256\"}],\"name\":\"IndexOutOfRange\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"uint256\",\"name\":\"expected\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"actual\",\"type\":\"uint256\"}],\"name\":\"StaleKey\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"length\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"max\",\"type\":\"uint256\"}],\"name\":\"TextTooLong\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"},{\"indexed\":true,\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"indexed\":false,\"internalType\":\"uint64\",\"name\":\"timestamp\",\"type\":\"uint64\"}],\"name\":\"FeedbackSubmitted\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"},{\"indexed\":false,\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"}],\"name\":\"FeedbackText\",\"type\":\"event\"},{\"inputs\":[],\"name\":\"MAX_TEXT\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"deployBlock\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"domainSeparator\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"feedbackCount\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"},{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"uint256\",\"name\":\"prev\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"deadline\",\"type\":\"uint256\"}],\"name\":\"feedbackDigest\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"},{\"internalType\":\"bytes32\",\"name\":\"\",\"type\":\"bytes32\"}],\"name\":\"keyStamp\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"index\",\"type\":\"uint256\"}],\"name\":\"recordAt\",\"outputs\":[{\"components\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"uint48\",\"name\":\"timestamp\",\"type\":\"uint48\"},{\"internalType\":\"uint48\",\"name\":\"blockNumber\",\"type\":\"uint48\"},{\"internalType\":\"bytes32\",\"name\":\"textHash\",\"type\":\"bytes32\"}],\"internalType\":\"structFeedbackLogV2.Record\",\"name\":\"\",\"type\":\"tuple\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"start\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"count\",\"type\":\"uint256\"}],\"name\":\"recordRange\",\"outputs\":[{\"components\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"uint48\",\"name\":\"timestamp\",\"type\":\"uint48\"},{\"internalType\":\"uint48\",\"name\":\"blockNumber\",\"type\":\"uint48\"},{\"internalType\":\"bytes32\",\"name\":\"textHash\",\"type\":\"bytes32\"}],\"internalType\":\"structFeedbackLogV2.Record[]\",\"name\":\"out\",\"type\":\"tuple[]\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"}],\"name\":\"submitFeedback\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"sender\",\"type\":\"address\"},{\"internalType\":\"string\",\"name\":\"text\",\"type\":\"string\"},{\"internalType\":\"bytes32\",\"name\":\"key\",\"type\":\"bytes32\"},{\"internalType\":\"uint256\",\"name\":\"prev\",\"type\":\"uint256\"},{\"internalType\":\"uint256\",\"name\":\"deadline\",\"type\":\"uint256\"},{\"internalType\":\"bytes\",\"name\":\"sig\",\"type\":\"bytes\"}],\"name\":\"submitFeedbackFor\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"id\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"version\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"pure\",\"type\":\"function\"}]",
	ID:  "FeedbackLogV2",
	Bin: "0x60e060405234801561000f575f5ffd5b50466080526100bb604080517f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f60208201527f0ebac01e76c3fe10d759137a7aefa050efff5e13f4666fb2b979721c0b1b83d5918101919091527fad7c5bef027816a800da1736444fb58a807ef4c9603b7848673f7e3a68eb14a560608201524660808201523060a08201525f9060c00160405160208183030381529060405280519060200120905090565b60a0524360c05260805160a05160c051610dd96100ec5f395f61011c01525f6104c401525f61049c0152610dd95ff3fe608060405234801561000f575f5ffd5b50600436106100a6575f3560e01c8063a3ec191a1161006e578063a3ec191a14610117578063a40198351461013e578063a77af52414610147578063e341a62314610167578063f698da251461017a578063fb483fb114610182575f5ffd5b80632ed3f65b146100aa57806354fd4d50146100c057806366b8c63e146100c75780636f1566e6146100da5780637195b94614610104575b5f5ffd5b5f545b6040519081526020015b60405180910390f35b60026100ad565b6100ad6100d5366004610a7d565b6101a2565b6100ad6100e8366004610b18565b600160209081525f928352604080842090915290825290205481565b6100ad610112366004610b40565b6102d1565b6100ad7f000000000000000000000000000000000000000000000000000000000000000081565b6100ad61080081565b61015a610155366004610ba8565b6102eb565b6040516100b79190610bc8565b6100ad610175366004610c4e565b61047c565b6100ad610499565b610195610190366004610c8d565b610592565b6040516100b79190610ca4565b5f428410156101d25760405163aa2fd92560e01b8152600481018590524260248201526044015b60405180910390fd5b6101dc8888610653565b6001600160a01b0389165f90815260016020908152604080832089845290915290205485811461023057604051630cceaeb160e01b81526004810188905260248101879052604481018290526064016101c9565b5f6102496102428c8c8c8c8c8c6106a8565b8686610788565b90508a6001600160a01b0316816001600160a01b03161461027d57604051635cd5d23360e01b815260040160405180910390fd5b42604061028d89821c6001610cff565b6001600160a01b038e165f9081526001602090815260408083208e84529091529020911b9190911790556102c28b8b8b6108d4565b9b9a5050505050505050505050565b5f6102e08787878787876106a8565b979650505050505050565b5f5460609080841061034757604080515f808252602082019092529061033e565b604080516080810182525f8082526020808301829052928201819052606082015282525f1990920191018161030c5790505b50915050610476565b5f6103528583610d26565b905080841115610360578093505b8367ffffffffffffffff81111561037957610379610d12565b6040519080825280602002602001820160405280156103c957816020015b604080516080810182525f8082526020808301829052928201819052606082015282525f199092019101816103975790505b5092505f5b84811015610472575f6103e18288610cff565b815481106103f1576103f1610d39565b5f91825260209182902060408051608081018252600290930290910180546001600160a01b038116845265ffffffffffff600160a01b8204811695850195909552600160d01b9004909316908201526001909101546060820152845185908390811061045f5761045f610d39565b60209081029190910101526001016103ce565b5050505b92915050565b5f6104878383610653565b6104923384846108d4565b9392505050565b5f7f000000000000000000000000000000000000000000000000000000000000000046036104e657507f000000000000000000000000000000000000000000000000000000000000000090565b61058d604080517f8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f60208201527f0ebac01e76c3fe10d759137a7aefa050efff5e13f4666fb2b979721c0b1b83d5918101919091527fad7c5bef027816a800da1736444fb58a807ef4c9603b7848673f7e3a68eb14a560608201524660808201523060a08201525f9060c00160405160208183030381529060405280519060200120905090565b905090565b604080516080810182525f808252602082018190529181018290526060810182905290548083106105e0576040516394666f0d60e01b815260048101849052602481018290526044016101c9565b5f83815481106105f2576105f2610d39565b5f91825260209182902060408051608081018252600290930290910180546001600160a01b038116845265ffffffffffff600160a01b8204811695850195909552600160d01b90049093169082015260019091015460608201529392505050565b805f8190036106755760405163af943d0360e01b815260040160405180910390fd5b6108008111156106a35760405163f4eb2b2d60e01b81526004810182905261080060248201526044016101c9565b505050565b5f5f7f306d651d22c0d53fb8a49ff8ad43d91881ad65e2bb1927b333363985198c124a8888886040516106dc929190610d4d565b6040519081900381206107259392918990899089906020019586526001600160a01b0394909416602086015260408501929092526060840152608083015260a082015260c00190565b604051602081830303815290604052805190602001209050610745610499565b60405161190160f01b6020820152602281019190915260428101829052606201604051602081830303815290604052805190602001209150509695505050505050565b5f604182146107aa57604051635cd5d23360e01b815260040160405180910390fd5b8235602084013560408501355f1a601b8110156107cf576107cc601b82610d5c565b90505b8060ff16601b141580156107e757508060ff16601c14155b1561080557604051635cd5d23360e01b815260040160405180910390fd5b7f7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a082111561084657604051635cd5d23360e01b815260040160405180910390fd5b604080515f81526020810180835289905260ff831691810191909152606081018490526080810183905260019060a0016020604051602081039080840390855afa158015610896573d5f5f3e3d5ffd5b5050604051601f1901519450506001600160a01b0384166108ca57604051635cd5d23360e01b815260040160405180910390fd5b5050509392505050565b5f8054604080516080810182526001600160a01b03871681524265ffffffffffff8181166020840152431682840152915192939192606082019061091b9088908890610d4d565b60408051918290039091209091528254600180820185555f9485526020948590208451600290930201805485870151868601516001600160a01b039586166001600160d01b031990931692909217600160a01b65ffffffffffff92831602176001600160d01b0316600160d01b91909216021781556060909401519301929092555167ffffffffffffffff841681529087169184917f806036b6199ae117015ce399533b13a52858350e3bb4a976faea92756b30de71910160405180910390a3817f122d40f956e925afc67d8d6d9ba1c28cffed10d5da29f703e4c3b7d9a82a8ca78585604051610a0d929190610d75565b60405180910390a2509392505050565b80356001600160a01b0381168114610a33575f5ffd5b919050565b5f5f83601f840112610a48575f5ffd5b50813567ffffffffffffffff811115610a5f575f5ffd5b602083019150836020828501011115610a76575f5ffd5b9250929050565b5f5f5f5f5f5f5f5f60c0898b031215610a94575f5ffd5b610a9d89610a1d565b9750602089013567ffffffffffffffff811115610ab8575f5ffd5b610ac48b828c01610a38565b90985096505060408901359450606089013593506080890135925060a089013567ffffffffffffffff811115610af8575f5ffd5b610b048b828c01610a38565b999c989b5096995094979396929594505050565b5f5f60408385031215610b29575f5ffd5b610b3283610a1d565b946020939093013593505050565b5f5f5f5f5f5f60a08789031215610b55575f5ffd5b610b5e87610a1d565b9550602087013567ffffffffffffffff811115610b79575f5ffd5b610b8589828a01610a38565b979a90995096976040810135976060820135975060809091013595509350505050565b5f5f60408385031215610bb9575f5ffd5b50508035926020909101359150565b602080825282518282018190525f918401906040840190835b81811015610c4357610c2d83855160018060a01b03815116825265ffffffffffff602082015116602083015265ffffffffffff6040820151166040830152606081015160608301525050565b6020939093019260809290920191600101610be1565b509095945050505050565b5f5f60208385031215610c5f575f5ffd5b823567ffffffffffffffff811115610c75575f5ffd5b610c8185828601610a38565b90969095509350505050565b5f60208284031215610c9d575f5ffd5b5035919050565b60808101610476828460018060a01b03815116825265ffffffffffff602082015116602083015265ffffffffffff6040820151166040830152606081015160608301525050565b634e487b7160e01b5f52601160045260245ffd5b8082018082111561047657610476610ceb565b634e487b7160e01b5f52604160045260245ffd5b8181038181111561047657610476610ceb565b634e487b7160e01b5f52603260045260245ffd5b818382375f9101908152919050565b60ff818116838216019081111561047657610476610ceb565b60208152816020820152818360408301375f818301604090810191909152601f909201601f1916010191905056fea264697066735822122061ce9840d93bdbd90bf3ef4138cf738734c35266d0624a9691a3e812bfe50e8c64736f6c63430008250033",
}

// FeedbackLogV2 is an auto generated Go binding around an Ethereum contract.
type FeedbackLogV2 struct {
	abi abi.ABI
}

// GetABI returns the ABI associated with this contract binding.
func (c *FeedbackLogV2) GetABI() abi.ABI {
	return c.abi
}

// NewFeedbackLogV2 creates a new instance of FeedbackLogV2.
func NewFeedbackLogV2() *FeedbackLogV2 {
	parsed, err := FeedbackLogV2MetaData.ParseABI()
	if err != nil {
		panic(errors.New("invalid ABI: " + err.Error()))
	}
	return &FeedbackLogV2{abi: *parsed}
}

// Instance creates a wrapper for a deployed contract instance at the given address.
// Use this to create the instance object passed to abigen v2 library functions Call, Transact, etc.
func (c *FeedbackLogV2) Instance(backend bind.ContractBackend, addr common.Address) *bind.BoundContract {
	return bind.NewBoundContract(addr, c.abi, backend, backend, backend)
}

// PackMAXTEXT is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa4019835.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function MAX_TEXT() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) PackMAXTEXT() []byte {
	enc, err := feedbackLogV2.abi.Pack("MAX_TEXT")
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
func (feedbackLogV2 *FeedbackLogV2) TryPackMAXTEXT() ([]byte, error) {
	return feedbackLogV2.abi.Pack("MAX_TEXT")
}

// UnpackMAXTEXT is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa4019835.
//
// Solidity: function MAX_TEXT() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) UnpackMAXTEXT(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("MAX_TEXT", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackDeployBlock is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa3ec191a.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function deployBlock() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) PackDeployBlock() []byte {
	enc, err := feedbackLogV2.abi.Pack("deployBlock")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackDeployBlock is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa3ec191a.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function deployBlock() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) TryPackDeployBlock() ([]byte, error) {
	return feedbackLogV2.abi.Pack("deployBlock")
}

// UnpackDeployBlock is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa3ec191a.
//
// Solidity: function deployBlock() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) UnpackDeployBlock(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("deployBlock", data)
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
func (feedbackLogV2 *FeedbackLogV2) PackDomainSeparator() []byte {
	enc, err := feedbackLogV2.abi.Pack("domainSeparator")
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
func (feedbackLogV2 *FeedbackLogV2) TryPackDomainSeparator() ([]byte, error) {
	return feedbackLogV2.abi.Pack("domainSeparator")
}

// UnpackDomainSeparator is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xf698da25.
//
// Solidity: function domainSeparator() view returns(bytes32)
func (feedbackLogV2 *FeedbackLogV2) UnpackDomainSeparator(data []byte) ([32]byte, error) {
	out, err := feedbackLogV2.abi.Unpack("domainSeparator", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackFeedbackCount is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x2ed3f65b.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function feedbackCount() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) PackFeedbackCount() []byte {
	enc, err := feedbackLogV2.abi.Pack("feedbackCount")
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
func (feedbackLogV2 *FeedbackLogV2) TryPackFeedbackCount() ([]byte, error) {
	return feedbackLogV2.abi.Pack("feedbackCount")
}

// UnpackFeedbackCount is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x2ed3f65b.
//
// Solidity: function feedbackCount() view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) UnpackFeedbackCount(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("feedbackCount", data)
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
func (feedbackLogV2 *FeedbackLogV2) PackFeedbackDigest(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int) []byte {
	enc, err := feedbackLogV2.abi.Pack("feedbackDigest", sender, text, key, prev, deadline)
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
func (feedbackLogV2 *FeedbackLogV2) TryPackFeedbackDigest(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int) ([]byte, error) {
	return feedbackLogV2.abi.Pack("feedbackDigest", sender, text, key, prev, deadline)
}

// UnpackFeedbackDigest is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x7195b946.
//
// Solidity: function feedbackDigest(address sender, string text, bytes32 key, uint256 prev, uint256 deadline) view returns(bytes32)
func (feedbackLogV2 *FeedbackLogV2) UnpackFeedbackDigest(data []byte) ([32]byte, error) {
	out, err := feedbackLogV2.abi.Unpack("feedbackDigest", data)
	if err != nil {
		return *new([32]byte), err
	}
	out0 := *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	return out0, nil
}

// PackKeyStamp is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x6f1566e6.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function keyStamp(address , bytes32 ) view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) PackKeyStamp(arg0 common.Address, arg1 [32]byte) []byte {
	enc, err := feedbackLogV2.abi.Pack("keyStamp", arg0, arg1)
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
func (feedbackLogV2 *FeedbackLogV2) TryPackKeyStamp(arg0 common.Address, arg1 [32]byte) ([]byte, error) {
	return feedbackLogV2.abi.Pack("keyStamp", arg0, arg1)
}

// UnpackKeyStamp is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x6f1566e6.
//
// Solidity: function keyStamp(address , bytes32 ) view returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) UnpackKeyStamp(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("keyStamp", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackRecordAt is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xfb483fb1.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function recordAt(uint256 index) view returns((address,uint48,uint48,bytes32))
func (feedbackLogV2 *FeedbackLogV2) PackRecordAt(index *big.Int) []byte {
	enc, err := feedbackLogV2.abi.Pack("recordAt", index)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackRecordAt is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xfb483fb1.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function recordAt(uint256 index) view returns((address,uint48,uint48,bytes32))
func (feedbackLogV2 *FeedbackLogV2) TryPackRecordAt(index *big.Int) ([]byte, error) {
	return feedbackLogV2.abi.Pack("recordAt", index)
}

// UnpackRecordAt is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xfb483fb1.
//
// Solidity: function recordAt(uint256 index) view returns((address,uint48,uint48,bytes32))
func (feedbackLogV2 *FeedbackLogV2) UnpackRecordAt(data []byte) (FeedbackLogV2Record, error) {
	out, err := feedbackLogV2.abi.Unpack("recordAt", data)
	if err != nil {
		return *new(FeedbackLogV2Record), err
	}
	out0 := *abi.ConvertType(out[0], new(FeedbackLogV2Record)).(*FeedbackLogV2Record)
	return out0, nil
}

// PackRecordRange is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa77af524.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function recordRange(uint256 start, uint256 count) view returns((address,uint48,uint48,bytes32)[] out)
func (feedbackLogV2 *FeedbackLogV2) PackRecordRange(start *big.Int, count *big.Int) []byte {
	enc, err := feedbackLogV2.abi.Pack("recordRange", start, count)
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackRecordRange is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xa77af524.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function recordRange(uint256 start, uint256 count) view returns((address,uint48,uint48,bytes32)[] out)
func (feedbackLogV2 *FeedbackLogV2) TryPackRecordRange(start *big.Int, count *big.Int) ([]byte, error) {
	return feedbackLogV2.abi.Pack("recordRange", start, count)
}

// UnpackRecordRange is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xa77af524.
//
// Solidity: function recordRange(uint256 start, uint256 count) view returns((address,uint48,uint48,bytes32)[] out)
func (feedbackLogV2 *FeedbackLogV2) UnpackRecordRange(data []byte) ([]FeedbackLogV2Record, error) {
	out, err := feedbackLogV2.abi.Unpack("recordRange", data)
	if err != nil {
		return *new([]FeedbackLogV2Record), err
	}
	out0 := *abi.ConvertType(out[0], new([]FeedbackLogV2Record)).(*[]FeedbackLogV2Record)
	return out0, nil
}

// PackSubmitFeedback is the Go binding used to pack the parameters required for calling
// the contract method with ID 0xe341a623.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function submitFeedback(string text) returns(uint256 id)
func (feedbackLogV2 *FeedbackLogV2) PackSubmitFeedback(text string) []byte {
	enc, err := feedbackLogV2.abi.Pack("submitFeedback", text)
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
func (feedbackLogV2 *FeedbackLogV2) TryPackSubmitFeedback(text string) ([]byte, error) {
	return feedbackLogV2.abi.Pack("submitFeedback", text)
}

// UnpackSubmitFeedback is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0xe341a623.
//
// Solidity: function submitFeedback(string text) returns(uint256 id)
func (feedbackLogV2 *FeedbackLogV2) UnpackSubmitFeedback(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("submitFeedback", data)
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
func (feedbackLogV2 *FeedbackLogV2) PackSubmitFeedbackFor(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int, sig []byte) []byte {
	enc, err := feedbackLogV2.abi.Pack("submitFeedbackFor", sender, text, key, prev, deadline, sig)
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
func (feedbackLogV2 *FeedbackLogV2) TryPackSubmitFeedbackFor(sender common.Address, text string, key [32]byte, prev *big.Int, deadline *big.Int, sig []byte) ([]byte, error) {
	return feedbackLogV2.abi.Pack("submitFeedbackFor", sender, text, key, prev, deadline, sig)
}

// UnpackSubmitFeedbackFor is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x66b8c63e.
//
// Solidity: function submitFeedbackFor(address sender, string text, bytes32 key, uint256 prev, uint256 deadline, bytes sig) returns(uint256 id)
func (feedbackLogV2 *FeedbackLogV2) UnpackSubmitFeedbackFor(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("submitFeedbackFor", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// PackVersion is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x54fd4d50.  This method will panic if any
// invalid/nil inputs are passed.
//
// Solidity: function version() pure returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) PackVersion() []byte {
	enc, err := feedbackLogV2.abi.Pack("version")
	if err != nil {
		panic(err)
	}
	return enc
}

// TryPackVersion is the Go binding used to pack the parameters required for calling
// the contract method with ID 0x54fd4d50.  This method will return an error
// if any inputs are invalid/nil.
//
// Solidity: function version() pure returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) TryPackVersion() ([]byte, error) {
	return feedbackLogV2.abi.Pack("version")
}

// UnpackVersion is the Go binding that unpacks the parameters returned
// from invoking the contract method with ID 0x54fd4d50.
//
// Solidity: function version() pure returns(uint256)
func (feedbackLogV2 *FeedbackLogV2) UnpackVersion(data []byte) (*big.Int, error) {
	out, err := feedbackLogV2.abi.Unpack("version", data)
	if err != nil {
		return new(big.Int), err
	}
	out0 := abi.ConvertType(out[0], new(big.Int)).(*big.Int)
	return out0, nil
}

// FeedbackLogV2FeedbackSubmitted represents a FeedbackSubmitted event raised by the FeedbackLogV2 contract.
type FeedbackLogV2FeedbackSubmitted struct {
	Id        *big.Int
	Sender    common.Address
	Timestamp uint64
	Raw       *types.Log // Blockchain specific contextual infos
}

const FeedbackLogV2FeedbackSubmittedEventName = "FeedbackSubmitted"

// ContractEventName returns the user-defined event name.
func (FeedbackLogV2FeedbackSubmitted) ContractEventName() string {
	return FeedbackLogV2FeedbackSubmittedEventName
}

// UnpackFeedbackSubmittedEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event FeedbackSubmitted(uint256 indexed id, address indexed sender, uint64 timestamp)
func (feedbackLogV2 *FeedbackLogV2) UnpackFeedbackSubmittedEvent(log *types.Log) (*FeedbackLogV2FeedbackSubmitted, error) {
	event := "FeedbackSubmitted"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != feedbackLogV2.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(FeedbackLogV2FeedbackSubmitted)
	if len(log.Data) > 0 {
		if err := feedbackLogV2.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range feedbackLogV2.abi.Events[event].Inputs {
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

// FeedbackLogV2FeedbackText represents a FeedbackText event raised by the FeedbackLogV2 contract.
type FeedbackLogV2FeedbackText struct {
	Id   *big.Int
	Text string
	Raw  *types.Log // Blockchain specific contextual infos
}

const FeedbackLogV2FeedbackTextEventName = "FeedbackText"

// ContractEventName returns the user-defined event name.
func (FeedbackLogV2FeedbackText) ContractEventName() string {
	return FeedbackLogV2FeedbackTextEventName
}

// UnpackFeedbackTextEvent is the Go binding that unpacks the event data emitted
// by contract.
//
// Solidity: event FeedbackText(uint256 indexed id, string text)
func (feedbackLogV2 *FeedbackLogV2) UnpackFeedbackTextEvent(log *types.Log) (*FeedbackLogV2FeedbackText, error) {
	event := "FeedbackText"
	if len(log.Topics) == 0 {
		return nil, bind.ErrNoEventSignature
	}
	if log.Topics[0] != feedbackLogV2.abi.Events[event].ID {
		return nil, bind.ErrEventSignatureMismatch
	}
	out := new(FeedbackLogV2FeedbackText)
	if len(log.Data) > 0 {
		if err := feedbackLogV2.abi.UnpackIntoInterface(out, event, log.Data); err != nil {
			return nil, err
		}
	}
	var indexed abi.Arguments
	for _, arg := range feedbackLogV2.abi.Events[event].Inputs {
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
func (feedbackLogV2 *FeedbackLogV2) UnpackError(raw []byte) (any, error) {
	if bytes.Equal(raw[:4], feedbackLogV2.abi.Errors["BadSignature"].ID.Bytes()[:4]) {
		return feedbackLogV2.UnpackBadSignatureError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLogV2.abi.Errors["EmptyText"].ID.Bytes()[:4]) {
		return feedbackLogV2.UnpackEmptyTextError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLogV2.abi.Errors["Expired"].ID.Bytes()[:4]) {
		return feedbackLogV2.UnpackExpiredError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLogV2.abi.Errors["IndexOutOfRange"].ID.Bytes()[:4]) {
		return feedbackLogV2.UnpackIndexOutOfRangeError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLogV2.abi.Errors["StaleKey"].ID.Bytes()[:4]) {
		return feedbackLogV2.UnpackStaleKeyError(raw[4:])
	}
	if bytes.Equal(raw[:4], feedbackLogV2.abi.Errors["TextTooLong"].ID.Bytes()[:4]) {
		return feedbackLogV2.UnpackTextTooLongError(raw[4:])
	}
	return nil, errors.New("Unknown error")
}

// FeedbackLogV2BadSignature represents a BadSignature error raised by the FeedbackLogV2 contract.
type FeedbackLogV2BadSignature struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error BadSignature()
func FeedbackLogV2BadSignatureErrorID() common.Hash {
	return common.HexToHash("0x5cd5d2335541c4f2ed05fbe44f397e8b79f8e2333157122d2dab06e378ef7685")
}

// UnpackBadSignatureError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error BadSignature()
func (feedbackLogV2 *FeedbackLogV2) UnpackBadSignatureError(raw []byte) (*FeedbackLogV2BadSignature, error) {
	out := new(FeedbackLogV2BadSignature)
	if err := feedbackLogV2.abi.UnpackIntoInterface(out, "BadSignature", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogV2EmptyText represents a EmptyText error raised by the FeedbackLogV2 contract.
type FeedbackLogV2EmptyText struct {
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error EmptyText()
func FeedbackLogV2EmptyTextErrorID() common.Hash {
	return common.HexToHash("0xaf943d03f8281dbf201ebc998526a6c0fc81c9e6fc8d20447b450157472cbe19")
}

// UnpackEmptyTextError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error EmptyText()
func (feedbackLogV2 *FeedbackLogV2) UnpackEmptyTextError(raw []byte) (*FeedbackLogV2EmptyText, error) {
	out := new(FeedbackLogV2EmptyText)
	if err := feedbackLogV2.abi.UnpackIntoInterface(out, "EmptyText", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogV2Expired represents a Expired error raised by the FeedbackLogV2 contract.
type FeedbackLogV2Expired struct {
	Deadline *big.Int
	NowTs    *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error Expired(uint256 deadline, uint256 nowTs)
func FeedbackLogV2ExpiredErrorID() common.Hash {
	return common.HexToHash("0xaa2fd9251337aad6985148406aafbb40098cf60c4d20af54767f17b944074845")
}

// UnpackExpiredError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error Expired(uint256 deadline, uint256 nowTs)
func (feedbackLogV2 *FeedbackLogV2) UnpackExpiredError(raw []byte) (*FeedbackLogV2Expired, error) {
	out := new(FeedbackLogV2Expired)
	if err := feedbackLogV2.abi.UnpackIntoInterface(out, "Expired", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogV2IndexOutOfRange represents a IndexOutOfRange error raised by the FeedbackLogV2 contract.
type FeedbackLogV2IndexOutOfRange struct {
	Index *big.Int
	Count *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error IndexOutOfRange(uint256 index, uint256 count)
func FeedbackLogV2IndexOutOfRangeErrorID() common.Hash {
	return common.HexToHash("0x94666f0d776338bf3dc0d578dde468fba3b7901915ee98978704643d741cc12d")
}

// UnpackIndexOutOfRangeError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error IndexOutOfRange(uint256 index, uint256 count)
func (feedbackLogV2 *FeedbackLogV2) UnpackIndexOutOfRangeError(raw []byte) (*FeedbackLogV2IndexOutOfRange, error) {
	out := new(FeedbackLogV2IndexOutOfRange)
	if err := feedbackLogV2.abi.UnpackIntoInterface(out, "IndexOutOfRange", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogV2StaleKey represents a StaleKey error raised by the FeedbackLogV2 contract.
type FeedbackLogV2StaleKey struct {
	Key      [32]byte
	Expected *big.Int
	Actual   *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error StaleKey(bytes32 key, uint256 expected, uint256 actual)
func FeedbackLogV2StaleKeyErrorID() common.Hash {
	return common.HexToHash("0x0cceaeb16c8ac2153700d56d556d175d34b298d93e463dffe85536422418f674")
}

// UnpackStaleKeyError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error StaleKey(bytes32 key, uint256 expected, uint256 actual)
func (feedbackLogV2 *FeedbackLogV2) UnpackStaleKeyError(raw []byte) (*FeedbackLogV2StaleKey, error) {
	out := new(FeedbackLogV2StaleKey)
	if err := feedbackLogV2.abi.UnpackIntoInterface(out, "StaleKey", raw); err != nil {
		return nil, err
	}
	return out, nil
}

// FeedbackLogV2TextTooLong represents a TextTooLong error raised by the FeedbackLogV2 contract.
type FeedbackLogV2TextTooLong struct {
	Length *big.Int
	Max    *big.Int
}

// ErrorID returns the hash of canonical representation of the error's signature.
//
// Solidity: error TextTooLong(uint256 length, uint256 max)
func FeedbackLogV2TextTooLongErrorID() common.Hash {
	return common.HexToHash("0xf4eb2b2dbe319380c840209258eb848c417097b3e21292e1f63f878c9e784194")
}

// UnpackTextTooLongError is the Go binding used to decode the provided
// error data into the corresponding Go error struct.
//
// Solidity: error TextTooLong(uint256 length, uint256 max)
func (feedbackLogV2 *FeedbackLogV2) UnpackTextTooLongError(raw []byte) (*FeedbackLogV2TextTooLong, error) {
	out := new(FeedbackLogV2TextTooLong)
	if err := feedbackLogV2.abi.UnpackIntoInterface(out, "TextTooLong", raw); err != nil {
		return nil, err
	}
	return out, nil
}
