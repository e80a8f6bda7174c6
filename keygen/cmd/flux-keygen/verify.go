package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/keygen"
)

func newVerifyCmd(e env) *cobra.Command {
	var ignoreMode bool
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check a certificate as flux-core's reader does",
		Long: `verify parses PATH with the rules of flux-core's certificate reader (sections "metadata"
and "curve" not indented, indented key = "value" lines under 256 bytes, metadata keys of
letters, digits, '.' and '-', values of Z85 characters, space and tab, 40-character Z85 keys)
and checks that the public key is the one the secret key gives. As the broker does, it also
refuses a file that group or others can read (--ignore-mode skips that, e.g. for a mounted
Secret that is copied before use). It prints the public key and name on success and exits 1
with the reason otherwise.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			c, err := keygen.ParseFile(path)
			if err != nil {
				return err
			}
			if !ignoreMode {
				st, err := os.Stat(path)
				if err != nil {
					return err
				}
				if perm := st.Mode().Perm(); perm&0o077 != 0 {
					return fmt.Errorf("%s: mode %04o lets group or others read the secret key and flux refuses it: chmod 600 %s", path, perm, path)
				}
			}
			name, _ := c.MetaValue("name")
			fmt.Fprintf(e.stdout, "%s: valid CURVE certificate, public key %s, name %q\n", path, c.PublicText(), name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&ignoreMode, "ignore-mode", false, "do not check that only the owner can read the file")
	return cmd
}
