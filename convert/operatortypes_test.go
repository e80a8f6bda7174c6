package convert

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/minicluster/minicluster/internal/operatorsrc"
	"github.com/minicluster/minicluster/internal/repo"
)

// unpackOperator unpacks the operator's source tarball once per test binary and returns its root.
var unpacked string

func unpackOperator(t testing.TB) string {
	t.Helper()
	if unpacked != "" {
		return unpacked
	}
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	tarball, err := operatorsrc.Tarball(root)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "flux-operator-src-")
	if err != nil {
		t.Fatal(err)
	}
	if unpacked, err = operatorsrc.Unpack(tarball, dir); err != nil {
		t.Fatal(err)
	}
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

// Both walks find fields of every shape, so that TestFieldsCoverOperatorTypes compares paths
// and not two empty lists: a plain field, one in a nested struct, one in a list of structs and
// one in a map of structs.
func TestOperatorPathsFound(t *testing.T) {
	theirs := operatorPaths(t, filepath.Join(unpackOperator(t), "api", "v1alpha2", "minicluster_types.go"))
	ours := ourPaths()
	for _, want := range []string{"spec.size", "spec.flux.container.image", "spec.containers[].image", "spec.containers[].volumes{}.path"} {
		if !slices.Contains(theirs, want) {
			t.Errorf("the operator's MiniClusterSpec, parsed, has no %s: %v", want, theirs)
		}
		if !slices.Contains(ours, want) {
			t.Errorf("this package's miniClusterSpec has no %s: %v", want, ours)
		}
	}
}
