package convert

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// services maps the operator's services (containers of a pod of their own, run as their images
// give them) to the chart's services and servicesVolumes.
func (c *converter) services() error {
	var services, volumes []any
	seen := map[string]bool{}
	var errs []error // the first of each service's
	for i, ct := range c.mc.Spec.Services {
		if err := c.service(i, ct, seen, &services, &volumes); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(services) > 0 {
		c.set("services", services)
		c.values = renamed(c.values, servicesHostname(c.mc.Metadata.Name, c.mc.Spec.Network.HeadlessName)).(map[string]any)
	}
	if len(volumes) > 0 {
		c.set("servicesVolumes", volumes)
	}
	return nil
}

// service adds services[i] to services, and its volumes to volumes.
func (c *converter) service(i int, ct miniClusterContainer, seen map[string]bool, services, volumes *[]any) error {
	at := fmt.Sprintf("spec.services[%d]", i)
	for _, name := range []string{"runFlux", "launcher", "batch", "batchRaw", "logs"} {
		if set := map[string]bool{"runFlux": ct.RunFlux, "launcher": ct.Launcher, "batch": ct.Batch, "batchRaw": ct.BatchRaw, "logs": ct.Logs != ""}[name]; set {
			return fmt.Errorf("%s.%s: a service runs no Flux, and the operator ignores it there; drop it", at, name)
		}
	}
	mounts, vols, err := c.volumes(at, ct, seen)
	if err != nil {
		return err
	}
	*volumes = append(*volumes, vols...)
	c.addPullSecret(ct.ImagePullSecret)
	if ct.Image == "" {
		return fmt.Errorf("%s.image is empty: give the service's image", at)
	}
	sc, err := c.sidecar(at, ct, envOf(ct), mounts)
	if err != nil {
		return err
	}
	*services = append(*services, sc)
	return nil
}

// servicesHostname matches the operator's names of its services pod: <name>-services.<subdomain>
// with the subdomain its headless Service: headlessName, else the MiniCluster's name (this
// operator's default), or flux-service (older operators' default, still in their docs); alone
// or followed by the namespace and domain. The chart's name is <name>-services; groups 1 and 3
// are the characters around the name, kept.
func servicesHostname(name, headless string) *regexp.Regexp {
	subdomains := []string{regexp.QuoteMeta(name), olderHeadlessName}
	if headless != "" {
		subdomains = append(subdomains, regexp.QuoteMeta(headless))
	}
	return regexp.MustCompile(`(^|[^.\w-])(` + regexp.QuoteMeta(name+"-services") + `)\.(?:` + strings.Join(subdomains, "|") + `)(\.|[^.\w-]|$)`)
}

// renamed is v with the operator's names of the services pod made the chart's in every string.
func renamed(v any, name *regexp.Regexp) any {
	switch x := v.(type) {
	case string:
		// Twice: a match takes the character after it, which may come before the next one.
		return name.ReplaceAllString(name.ReplaceAllString(x, "$1$2$3"), "$1$2$3")
	case map[string]any:
		for k, e := range x {
			x[k] = renamed(e, name)
		}
	case []any:
		for i, e := range x {
			x[i] = renamed(e, name)
		}
	}
	return v
}
