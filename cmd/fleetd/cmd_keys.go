package main

import (
	"errors"
	"path/filepath"

	"github.com/qafleet/fleetd/chain"
	"github.com/spf13/cobra"
)

func (a chainCommands) keysCmd() *cobra.Command {
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
	var importOut string
	importCmd := &cobra.Command{
		Use:   "import SRC --out FILE",
		Short: "Copy a key delivered group-readable (a Kubernetes secret volume) to FILE with mode 0600",
		Long: `Reads the key in SRC, which may be group-readable (0440: how a Kubernetes
secret volume reaches a non-root pod under an fsGroup) but not group-writable
or accessible to others, and writes it to FILE with mode 0600, the only mode
fleetd loads keys with. Refuses to overwrite FILE. Prints the address.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if importOut == "" {
				return errors.New("keys import: --out is required")
			}
			k, err := chain.ImportKey(args[0], importOut)
			if err != nil {
				return err
			}
			return a.printJSON(map[string]string{"address": k.Address().String(), "key_file": abs(importOut)})
		},
	}
	importCmd.Flags().StringVar(&importOut, "out", "", "where to write the key, 0600 (refuses to overwrite)")
	c.AddCommand(newCmd, importCmd)
	return c
}
