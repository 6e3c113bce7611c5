package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"

	"github.com/qafleet/fleetd/chain"
	"github.com/qafleet/fleetd/fleet"
)

// RPC checks that the node at rpc (chain.rpc) answers, through dial (the
// connection fleetd makes: its guard and timeout), on chainID (0: any
// chain). It returns the client when the node answered; the caller closes
// it. A node that does not answer is marked NodeDown.
func RPC(ctx context.Context, rpc string, chainID uint64, dial func(context.Context) (*chain.Client, error)) (Check, *chain.Client) {
	if rpc == "" {
		return Check{Name: "rpc", Fatal: true, Detail: "chain.rpc is not set", Fix: "set chain.rpc to the node's JSON-RPC URL"}, nil
	}
	cl, err := dial(ctx)
	switch {
	case errors.Is(err, chain.ErrWrongChain):
		return Check{Name: "rpc", Fatal: true, Detail: err.Error(), Fix: "fix chain.chain_id, or chain.rpc if it points at the wrong network"}, nil
	case err != nil:
		return Check{Name: "rpc", Fatal: true, NodeDown: errors.Is(err, chain.ErrUnreachable), Detail: err.Error(), Fix: "start the node, or fix chain.rpc (for a local chain: fleetd chain devnet)"}, nil
	}
	head, _, _, herr := cl.Head(ctx)
	d := fmt.Sprintf("%s answers: chain id %d, block %d", rpc, cl.ChainID(), head)
	if herr != nil {
		d = fmt.Sprintf("%s answers: chain id %d (head: %v)", rpc, cl.ChainID(), herr)
	}
	if chainID == 0 {
		d += "; chain.chain_id is 0, so any chain is accepted"
	}
	return Check{Name: "rpc", OK: true, Fatal: true, Detail: d}, cl
}

// FeedbackLog checks that a FeedbackLog answers at addr on cl's chain. A
// read of the log that gets no answer says nothing of the contract: the
// line is marked NodeDown.
func FeedbackLog(ctx context.Context, cl *chain.Client, addr fleet.Address) Check {
	l := cl.FeedbackLog(addr)
	if err := l.CheckInterface(ctx); err != nil && NodeFailed(err) {
		// The node answered the dial, then a read of the log got no
		// answer (a timeout, a reset): that says nothing about the
		// contract, so `fleetd run` starts degraded instead of
		// refusing "not a FeedbackLog" (issue 25).
		return Check{Name: "feedback log", Fatal: true, NodeDown: true, Detail: "not checked: the node stopped answering: " + NodeFailure(err)}
	} else if err != nil {
		return Check{Name: "feedback log", Fatal: true, Detail: err.Error(),
			Fix: "point chain.feedback_log at fleetd's FeedbackLog on this chain, or deploy one: fleetd chain deploy --config F"}
	}
	n, _ := l.Count(ctx)
	return Check{Name: "feedback log", OK: true, Fatal: true, Detail: fmt.Sprintf("FeedbackLog at %s holds %d entries", addr, n)}
}

// Key checks that the key file at path (named by the config's field)
// loads, LoadKey refusing unsafe file modes, and returns the key, nil when
// it does not; path "" is the field not set. howNew says how to make one.
func Key(name, path, field, howNew string) (Check, *chain.Key) {
	if path == "" {
		return Check{Name: name, Fatal: true, Detail: field + " is not set", Fix: "create one with " + howNew + " and set " + field}, nil
	}
	k, err := chain.LoadKey(path)
	if err != nil {
		fix := "create one with " + howNew + " and set " + field
		if fi, serr := os.Stat(path); serr == nil && fi.Mode().Perm()&0o077 != 0 {
			fix = "chmod 600 " + path
		}
		return Check{Name: name, Fatal: true, Detail: err.Error(), Fix: fix}, nil
	}
	return Check{Name: name, OK: true, Fatal: true, Detail: fmt.Sprintf("%s loads (%s)", path, k.Address())}, k
}

// NodeFailed reports whether err is the node not answering (unreachable,
// a timeout, a connection reset or an answer cut short) rather than an
// answer that says something.
func NodeFailed(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.Is(err, chain.ErrUnreachable) || errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.DeadlineExceeded)
}

// NodeFailure is the network failure inside err, for a message that does
// not repeat what the failed check would have concluded.
func NodeFailure(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Error()
	}
	return err.Error()
}
