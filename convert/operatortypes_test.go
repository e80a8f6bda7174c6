package convert

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/repo"
)

// operatorTarball is the Flux Operator's source the converter follows (../shared/flux-operator
// beside the repository, as in the project's other operator checks).
func operatorTarball(t testing.TB) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("FLUX_OPERATOR_TARBALL"); p != "" {
		return p
	}
	matches, _ := filepath.Glob(filepath.Join(root, "..", "shared", "flux-operator", "flux-operator-*.tar.gz"))
	if len(matches) == 0 {
		t.Fatalf("no flux-operator-*.tar.gz in %s: the Flux Operator's source is needed to check the converter against its types (set FLUX_OPERATOR_TARBALL)", filepath.Join(root, "..", "shared", "flux-operator"))
	}
	return matches[0]
}

// unpackOperator unpacks the tarball into a temporary directory once per test binary and
// returns the source root (the tarball's single top directory).
var unpacked string

func unpackOperator(t testing.TB) string {
	t.Helper()
	if unpacked != "" {
		return unpacked
	}
	f, err := os.Open(operatorTarball(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "flux-operator-src-")
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	top := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			t.Fatalf("tarball entry %q leaves its directory", h.Name)
		}
		if first, _, _ := strings.Cut(name, "/"); top == "" && (h.Typeflag == tar.TypeDir || h.Typeflag == tar.TypeReg) {
			top = first
		}
		target := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(out, tr); err != nil {
				t.Fatal(err)
			}
			out.Close()
		}
	}
	unpacked = filepath.Join(dir, top)
	return unpacked
}

func TestMain(m *testing.M) {
	code := m.Run()
	if unpacked != "" {
		os.RemoveAll(filepath.Dir(unpacked))
	}
	os.Exit(code)
}

// operatorPaths parses api/v1alpha2/minicluster_types.go with go/ast and lists every field of
// MiniClusterSpec as a path (spec.flux.container.image, spec.containers[].volumes{}.path),
// descending into the file's own struct types; other types (Kubernetes', maps of scalars) are
// leaves.
func operatorPaths(t testing.TB, typesFile string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), typesFile, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	structs := map[string]*ast.StructType{}
	ast.Inspect(file, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok {
			if st, ok := ts.Type.(*ast.StructType); ok {
				structs[ts.Name.Name] = st
			}
		}
		return true
	})
	spec, ok := structs["MiniClusterSpec"]
	if !ok {
		t.Fatalf("%s has no MiniClusterSpec", typesFile)
	}
	var paths []string
	var walk func(prefix string, st *ast.StructType)
	walk = func(prefix string, st *ast.StructType) {
		for _, f := range st.Fields.List {
			if f.Tag == nil || len(f.Names) == 0 {
				continue
			}
			tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("json")
			name, _, _ := strings.Cut(tag, ",")
			if name == "" || name == "-" {
				continue
			}
			path := prefix + "." + name
			suffix, elem := "", f.Type
			switch x := f.Type.(type) {
			case *ast.ArrayType:
				suffix, elem = "[]", x.Elt
			case *ast.MapType:
				suffix, elem = "{}", x.Value
			}
			if id, ok := elem.(*ast.Ident); ok {
				if inner, ok := structs[id.Name]; ok {
					walk(path+suffix, inner)
					continue
				}
			}
			paths = append(paths, path)
		}
	}
	walk("spec", spec)
	sort.Strings(paths)
	return paths
}

// ourPaths lists the same paths from this package's miniClusterSpec, by reflection.
func ourPaths() []string {
	var paths []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			path := prefix + "." + name
			ft, suffix := f.Type, ""
			switch ft.Kind() {
			case reflect.Slice:
				ft, suffix = ft.Elem(), "[]"
			case reflect.Map:
				ft, suffix = ft.Elem(), "{}"
			case reflect.Pointer:
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && ft.PkgPath() == reflect.TypeOf(miniClusterSpec{}).PkgPath() {
				walk(path+suffix, ft)
				continue
			}
			paths = append(paths, path)
		}
	}
	walk("spec", reflect.TypeOf(miniClusterSpec{}))
	sort.Strings(paths)
	return paths
}

func TestPrintOperatorPaths(t *testing.T) {
	if os.Getenv("PRINT_PATHS") == "" {
		t.Skip("PRINT_PATHS=1 prints the operator's field paths")
	}
	for _, p := range operatorPaths(t, filepath.Join(unpackOperator(t), "api", "v1alpha2", "minicluster_types.go")) {
		fmt.Println(p)
	}
}
