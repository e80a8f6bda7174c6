package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/convert"
)

// newRootCommand builds the command; stdin and stdout are passed in so tests can drive it.
func newRootCommand(stdin io.Reader, stdout io.Writer) *cobra.Command {
	var images []string
	var opts convert.Options
	var table bool
	cmd := &cobra.Command{
		Use:   "minicluster-convert [FILE|-] [--image FROM=TO]... [--view-image IMAGE]",
		Short: "Chart values from a Flux Operator MiniCluster",
		Long: `minicluster-convert reads one Flux Operator MiniCluster (flux-framework.org/v1alpha2) from
FILE (or stdin when FILE is - or absent) and writes values of the minicluster chart that make
the same MiniCluster to stdout. A field the chart cannot do is refused with what to do instead,
and nothing is written. A file with several MiniClusters is refused: one values file per release.

  minicluster-convert minicluster.yaml --image ubuntu:noble=registry.example.com/app:1.0 > values.yaml
  helm install flux-sample charts/minicluster -f values.yaml

--table prints what becomes of every field of the v1alpha2 spec.`,
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
	cmd.Flags().StringArrayVar(&images, "image", nil, "FROM=TO: use image TO wherever the MiniCluster names FROM (repeatable)")
	cmd.Flags().StringVar(&opts.ViewImage, "view-image", "", "Flux view image (flux.view.image); default: the MiniCluster's, else the operator's default")
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
