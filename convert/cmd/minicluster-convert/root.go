package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/convert"
)

// newRootCmd builds the command; stdin and stdout are passed in so tests can drive it.
func newRootCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var images []string
	var opts convert.Options
	var table bool
	cmd := &cobra.Command{
		Use:   "minicluster-convert [FILE|-]",
		Short: "Write the minicluster chart's values for a Flux Operator MiniCluster",
		Long: `minicluster-convert reads one Flux Operator MiniCluster (flux-framework.org/v1alpha2) from
FILE (or stdin when FILE is - or absent) and writes values of the minicluster chart that make
the same MiniCluster to stdout. A field the chart cannot do is refused with what to do instead,
and nothing is written. A file with several MiniClusters is refused: one values file per release.

--table prints what becomes of every field of the v1alpha2 spec.`,
		Example: `  minicluster-convert minicluster.yaml --image ubuntu:noble=registry.example.com/app:1.0 > values.yaml
  helm install flux-sample charts/minicluster -f values.yaml`,
		Args:          cobra.MaximumNArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if table {
				return convert.WriteTable(stdout)
			}
			opts.Images = map[string]string{}
			for _, s := range images {
				from, to, err := convert.ParseImageFlag(s)
				if err != nil {
					return err
				}
				opts.Images[from] = to
			}
			in, name, err := readInput(stdin, args)
			if err != nil {
				return err
			}
			res, err := convert.Convert(in, opts)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			out, err := convert.Write(res)
			if err != nil {
				return err
			}
			_, err = stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringArrayVar(&images, "image", nil, "use image TO wherever the MiniCluster names image FROM, as `FROM=TO` (repeatable)")
	cmd.Flags().StringVar(&opts.ViewImage, "view-image", "", "Flux view `IMAGE`, flux.view.image (default: the MiniCluster's, else the operator's default view)")
	cmd.Flags().BoolVar(&table, "table", false, "print the field table (Markdown) and exit")
	return cmd
}

func readInput(stdin io.Reader, args []string) ([]byte, string, error) {
	if len(args) == 0 || args[0] == "-" {
		in, err := io.ReadAll(stdin)
		if err != nil {
			return nil, "", fmt.Errorf("read stdin: %w", err)
		}
		return in, "stdin", nil
	}
	in, err := os.ReadFile(args[0])
	return in, args[0], err
}
