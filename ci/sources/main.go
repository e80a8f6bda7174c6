// Command sources prints the path of a pinned source tarball (internal/sources/sources.txt),
// checked against its sha256: from $MINICLUSTER_MIRROR or ../shared when one holds it, else from
// the build cache, else downloaded into the cache. The build scripts run it from the repository:
//
//	go run ./ci/sources flux-core   # prints the path
//	go run ./ci/sources -list       # every pin: name, file, sha256, URL
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/minicluster/minicluster/internal/repo"
	"github.com/minicluster/minicluster/internal/sources"
)

func main() {
	list := flag.Bool("list", false, "print every pinned source: name, file, sha256, URL")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./ci/sources NAME | -list")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*list, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "sources: %v\n", err)
		os.Exit(1)
	}
}

func run(list bool, args []string) error {
	if list {
		all, err := sources.All()
		if err != nil {
			return err
		}
		for _, s := range all {
			fmt.Println(s.Name, s.File, s.SHA256, s.URL)
		}
		return nil
	}
	if len(args) != 1 {
		return fmt.Errorf("want one source name (go run ./ci/sources -list lists them), got %q", args)
	}
	s, err := sources.Lookup(args[0])
	if err != nil {
		return err
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	places, err := sources.DefaultPlaces(root)
	if err != nil {
		return err
	}
	path, err := s.Fetch(places, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Println(path)
	return nil
}
