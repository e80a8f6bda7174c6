package fluxstandin

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/minicluster/minicluster/internal/hostlist"
)

// Host is one broker of the instance, with its URIs after %h/%p substitution.
type Host struct {
	Name    string
	Bind    string // tcp://ADDR:PORT; ADDR may be an interface name or *
	Connect string // tcp://HOST:PORT
	Parent  string // explicit parent host name, or ""
}

// Bootstrap is the [bootstrap] table of broker.toml, expanded.
type Bootstrap struct {
	CurveCert  string
	EnableIPv6 bool
	Hosts      []Host
}

// bootstrapTOML mirrors flux-config-bootstrap(5); any other key is an error, as in Flux.
type bootstrapTOML struct {
	CurveCert      string      `toml:"curve_cert"`
	DefaultPort    *int        `toml:"default_port"`
	DefaultBind    string      `toml:"default_bind"`
	DefaultConnect string      `toml:"default_connect"`
	Hosts          []hostEntry `toml:"hosts"`
	EnableIPv6     bool        `toml:"enable_ipv6"`
}

type hostEntry struct {
	Host    string `toml:"host"`
	Bind    string `toml:"bind"`
	Connect string `toml:"connect"`
	Parent  string `toml:"parent"`
}

// LoadConfig reads DIR/*.toml as Flux does and returns the [bootstrap] table.
func LoadConfig(dir string) (*Bootstrap, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var found *bootstrapTOML
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Bootstrap *bootstrapTOML `toml:"bootstrap"`
		}
		md, err := toml.Decode(string(data), &doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, key := range md.Undecoded() {
			if key[0] == "bootstrap" {
				return nil, fmt.Errorf("%s: unknown key %q in [bootstrap]; flux-config-bootstrap(5) allows curve_cert, default_port, default_bind, default_connect, hosts (host, bind, connect, parent), enable_ipv6", f, key.String())
			}
		}
		if doc.Bootstrap != nil {
			if found != nil {
				return nil, fmt.Errorf("%s: a second [bootstrap] table in %s; keep one", f, dir)
			}
			found = doc.Bootstrap
		}
	}
	if found == nil {
		return nil, fmt.Errorf("no [bootstrap] table in %s/*.toml; the broker needs one to find its peers", dir)
	}
	return found.expand()
}

// maxHosts bounds a host list, as an indexed Job's completions are bounded.
const maxHosts = 100000

func (b *bootstrapTOML) expand() (*Bootstrap, error) {
	out := &Bootstrap{CurveCert: b.CurveCert, EnableIPv6: b.EnableIPv6}
	seen := map[string]bool{}
	for _, e := range b.Hosts {
		if e.Host == "" {
			return nil, fmt.Errorf("bootstrap.hosts: an entry has no host; give each entry host = \"NAME\" or a hostlist")
		}
		names, err := hostlist.Expand(e.Host, maxHosts)
		if err != nil {
			return nil, fmt.Errorf("bootstrap.hosts: %w", err)
		}
		for _, name := range names {
			if seen[name] {
				return nil, fmt.Errorf("bootstrap.hosts: host %q is listed twice; each host must appear once", name)
			}
			seen[name] = true
			h := Host{Name: name, Parent: e.Parent}
			if h.Bind, err = b.uri("bind", name, e.Bind, b.DefaultBind); err != nil {
				return nil, err
			}
			if h.Connect, err = b.uri("connect", name, e.Connect, b.DefaultConnect); err != nil {
				return nil, err
			}
			out.Hosts = append(out.Hosts, h)
		}
	}
	if len(out.Hosts) > 1 && out.CurveCert == "" {
		return nil, fmt.Errorf("bootstrap.curve_cert is not set and there are %d hosts; set it to the path of a flux keygen certificate", len(out.Hosts))
	}
	return out, nil
}

// uri picks the entry's template or the default one and substitutes %h and %p.
func (b *bootstrapTOML) uri(kind, host, tmpl, def string) (string, error) {
	if tmpl == "" {
		tmpl = def
	}
	if tmpl == "" {
		return "", nil // checked when the URI is needed: a single broker needs none
	}
	var sb strings.Builder
	for i := 0; i < len(tmpl); i++ {
		if tmpl[i] != '%' || i+1 == len(tmpl) {
			sb.WriteByte(tmpl[i])
			continue
		}
		i++
		switch tmpl[i] {
		case 'h':
			sb.WriteString(host)
		case 'p':
			if b.DefaultPort == nil {
				return "", fmt.Errorf("bootstrap: %s URI %q uses %%p but default_port is not set; set default_port (8050 by convention)", kind, tmpl)
			}
			sb.WriteString(strconv.Itoa(*b.DefaultPort))
		case '%':
			sb.WriteByte('%')
		default:
			return "", fmt.Errorf("bootstrap: %s URI %q has unknown token %%%c; use %%h (host) or %%p (port)", kind, tmpl, tmpl[i])
		}
	}
	return sb.String(), nil
}

// tcpAddr returns the HOST:PORT of a tcp:// URI.
func tcpAddr(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, "tcp://")
	if !ok {
		return "", fmt.Errorf("URI %q is not tcp://HOST:PORT; the stand-in speaks TCP only", uri)
	}
	if _, _, err := net.SplitHostPort(rest); err != nil {
		return "", fmt.Errorf("URI %q: %w", uri, err)
	}
	return rest, nil
}

// listenAddr resolves a bind URI: an interface name becomes that interface's address, * any.
func listenAddr(uri string, ipv6 bool) (string, error) {
	addr, err := tcpAddr(uri)
	if err != nil {
		return "", err
	}
	host, port, _ := net.SplitHostPort(addr)
	if host == "*" {
		return net.JoinHostPort("", port), nil
	}
	iface, err := net.InterfaceByName(host)
	if err != nil {
		return addr, nil // not an interface: an address or a name
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return "", fmt.Errorf("bind URI %q: addresses of interface %s: %w", uri, host, err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && (ipn.IP.To4() != nil || (ipv6 && !ipn.IP.IsLinkLocalUnicast())) {
			return net.JoinHostPort(ipn.IP.String(), port), nil
		}
	}
	return "", fmt.Errorf("bind URI %q: interface %s has no usable address", uri, host)
}
