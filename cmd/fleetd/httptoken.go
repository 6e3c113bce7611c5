package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/qafleet/fleetd/fleet"
	"github.com/spf13/cobra"
)

// The bearer token that guards the daemon's HTTP controls (the console) and
// the MCP server's HTTP transport: 32 random bytes as hex in
// <data_dir>/keys/http.token, mode 0600, made on first use.

// httpToken returns the data dir's HTTP bearer token, creating it when
// create is set and it does not exist. A token file other users can read is
// refused, as key files are.
func (a serviceCommands) httpToken(create bool) (string, error) {
	path := a.httpTokenFile()
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("http token: %w", err)
		}
		tok := hex.EncodeToString(b[:])
		if err := fleet.WriteFileAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("http token: %w", err)
		}
		return tok, nil
	case err != nil:
		return "", fmt.Errorf("http token %s: %w", path, err)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("http token %s: readable by other users (mode %04o); run chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("http token: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 32 {
		return "", fmt.Errorf("http token %s: too short (want at least 32 characters)", path)
	}
	return tok, nil
}

func (a serviceCommands) httpTokenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "http-token",
		Short: "Print the bearer token for the daemon's HTTP controls and the MCP HTTP transport (made on first use)",
		Long: `Prints the bearer token kept in <data-dir>/keys/http.token (0600), creating
it on first use. The console's controls and the MCP server's HTTP transport
need it as "Authorization: Bearer TOKEN"; anything that can read the file
can turn the dial.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tok, err := a.httpToken(true)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, tok)
			return err
		},
	}
}
