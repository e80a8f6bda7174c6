package app

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/minicluster/minicluster/convert"
)

const convertLong = `convert reads one Flux Operator MiniCluster (flux-framework.org/v1alpha2) from FILE (or
stdin when FILE is - or absent) and writes values of the minicluster chart that make the same
MiniCluster to stdout. A field the chart cannot do is refused with what to do instead, and
nothing is written. A file with several MiniClusters is refused: one values file per release.

--table prints what becomes of every field of the v1alpha2 spec.`

// NewConvertCmd is `minicluster convert [FILE|-]`.
func NewConvertCmd(e Env) *cobra.Command {
	var images []string
	var opts convert.Options
	var table bool
	cmd := &cobra.Command{
		Use:   "convert [FILE|-]",
		Short: "Write the minicluster chart's values for a Flux Operator MiniCluster",
		Long:  convertLong,
		Example: `  minicluster convert minicluster.yaml --image ubuntu:noble=registry.example.com/app:1.0 > values.yaml
  helm install flux-sample ./charts/minicluster -f values.yaml`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if table {
				return convert.WriteTable(e.Stdout)
			}
			opts.Images = map[string]string{}
			for _, s := range images {
				from, to, err := convert.ParseImageFlag(s)
				if err != nil {
					return UsageError{err}
				}
				opts.Images[from] = to
			}
			in, name, err := readInput(e.Stdin, args)
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
			_, err = e.Stdout.Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&images, "image", nil, "use image TO wherever the MiniCluster names image FROM, as `FROM=TO` (repeatable)")
	f.StringVar(&opts.ViewImage, "view-image", "", "Flux view `IMAGE`, flux.view.image (default: the MiniCluster's, else the operator's default view)")
	f.BoolVar(&table, "table", false, "print the field table (Markdown) and exit")
	return cmd
}

// readInput reads FILE, or stdin for - or no argument, and names what it read for errors.
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
