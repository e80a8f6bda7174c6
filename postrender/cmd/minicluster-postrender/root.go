package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/postrender"
)

// newRootCmd builds the command; stdin and stdout are passed in so tests can drive it.
func newRootCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var opts postrender.Options
	cmd := &cobra.Command{
		Use:   "minicluster-postrender",
		Short: "Check and complete the minicluster chart's manifests, as Helm's post-renderer",
		Long: `minicluster-postrender reads the manifests Helm rendered on stdin and writes them to stdout.
With --kustomize DIR it first applies the kustomization in DIR, which lists rendered.yaml (the
manifests from stdin) among its resources. It then recomputes every MiniCluster's broker.toml,
host list and size from the final Job, Service and namespace, and fails, writing nothing, when a
MiniCluster could not work. Helm runs it; a user names it on helm install and upgrade.`,
		Example: `  # Helm 3
  helm install NAME charts/minicluster --post-renderer ./bin/minicluster-postrender \
    [--post-renderer-args=--kustomize=DIR]
  # Helm 4
  helm plugin install ./bin/helm-plugin/minicluster
  helm install NAME charts/minicluster --post-renderer minicluster [--post-renderer-args=--kustomize=DIR]`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unexpected argument %q: the manifests come on stdin; the only flag is --kustomize DIR", args[0])
			}
			return nil
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := io.ReadAll(stdin)
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			out, err := postrender.Render(in, opts)
			if err != nil {
				return err
			}
			_, err = stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.KustomizeDir, "kustomize", "", "apply the kustomization in `DIR` first (its resources list rendered.yaml)")
	return cmd
}
