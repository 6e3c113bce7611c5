package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ListenOptions are how ListenAndServe serves streamable HTTP (`fleetd mcp
// --transport http`).
type ListenOptions struct {
	// Addr is the TCP address to listen on; an error names it.
	Addr string
	// HTTP configures the door (its Token is set here when a token is
	// required).
	HTTP HTTPOptions
	// RequireToken requires the bearer token on a loopback address too;
	// on any other address it is always required.
	RequireToken bool
	// Token returns the bearer token; it is asked once, and only when a
	// token is required.
	Token func() (string, error)
	// Ready is called once the listener is open with the endpoint's URL
	// and whether requests need the token.
	Ready func(url string, tokenRequired bool)
	// ShutdownTimeout bounds the stop (runs, then HTTP); default 30 s.
	ShutdownTimeout time.Duration
	// Logger takes the HTTP server's errors.
	Logger *slog.Logger
}

// ListenAndServe serves s over streamable HTTP at /mcp until ctx is done,
// then ends every session's run (they end cancelled, release their names,
// sweep their keys and write their footers, which also ends the sessions'
// event streams) and stops the HTTP server, within o.ShutdownTimeout. An
// error is the listener's, the token's or the server's; a stop by ctx is
// nil unless the shutdown failed.
func (s *Server) ListenAndServe(ctx context.Context, o ListenOptions) error {
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", o.Addr, err)
	}
	needToken := o.RequireToken || !isLoopback(ln.Addr())
	if needToken {
		want, err := o.Token()
		if err != nil {
			ln.Close()
			return err
		}
		o.HTTP.Token = func(tok string) bool { return TokenMatches(tok, want) }
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(o.HTTP))
	hs := HTTPServer(mux, o.Logger)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if o.Ready != nil {
		o.Ready("http://"+ln.Addr().String()+"/mcp", needToken)
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		s.Close(context.Background())
		return fmt.Errorf("mcp http: %w", err)
	}
	timeout := o.ShutdownTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cerr := s.Close(sctx)
	return errors.Join(cerr, hs.Shutdown(sctx))
}

// TokenMatches compares a presented bearer token with the expected one in
// constant time; an empty expected token matches nothing.
func TokenMatches(presented, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(presented), []byte(want)) == 1
}

func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
