package main

import (
	"errors"
	"path/filepath"

	"github.com/qafleet/fleetd/chain"
	"github.com/spf13/cobra"
)

func (a *app) keysCmd() *cobra.Command {
	c := &cobra.Command{Use: "keys", Short: "Manage signing keys"}
	var out string
	newCmd := &cobra.Command{
		Use:   "new --out FILE",
		Short: "Generate a secp256k1 key into FILE (mode 0600) and print its address",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return errors.New("keys new: --out is required")
			}
			k, err := chain.GenerateKey()
			if err != nil {
				return err
			}
			if err := chain.WriteKeyFile(out, k); err != nil {
				return err
			}
			abs, _ := filepath.Abs(out)
			return a.printJSON(map[string]string{"address": k.Address().String(), "key_file": abs})
		},
	}
	newCmd.Flags().StringVar(&out, "out", "", "where to write the key (refuses to overwrite)")
	c.AddCommand(newCmd)
	return c
}
