package postrender

import "fmt"

// resolve finds the MiniCluster whose broker ConfigMap is cm as the objects are now: the Job
// that mounts cm, and the Service named by that Job's pod subdomain. A kustomization's renames are
// followed: kustomize updates the ConfigMap reference and (see subdomainConfig) the subdomain.
func resolve(cm *object, objs []*object) (*miniCluster, error) {
	p, err := parseParameters(cm)
	if err != nil {
		return nil, err
	}
	mc := &miniCluster{config: cm, params: p}
	if mc.job, mc.volume, err = mountingJob(cm, p.Job, objs); err != nil {
		return nil, err
	}
	if mc.service, err = podService(mc.job, objs); err != nil {
		return nil, err
	}
	return mc, nil
}

// mountingJob returns the one Job of cm's namespace that mounts cm, and the name of its volume.
// named is the Job the chart rendered, for messages.
func mountingJob(cm *object, named string, objs []*object) (*object, string, error) {
	var mounting []*object
	volume := ""
	for _, job := range objs {
		if !job.is("batch/v1", "Job") || (job.namespace != cm.namespace && job.namespace != "") {
			continue
		}
		v, ok := configMapVolume(job, cm.name)
		if !ok {
			continue
		}
		if job.namespace == "" {
			return nil, "", fmt.Errorf("the Job %s has no metadata.namespace (its broker ConfigMap is in %s): the brokers' FQDNs need it; set namespace: in your kustomization or keep the chart's", job.name, cm.namespace)
		}
		mounting, volume = append(mounting, job), v
	}
	if err := oneJob(cm, find(objs, "batch/v1", "Job", cm.namespace, named), named, mounting); err != nil {
		return nil, "", err
	}
	return mounting[0], volume, nil
}

// oneJob checks that exactly one Job mounts the broker ConfigMap cm and that it is the Job its
// parameters name (named, the object of that name or nil), unless that Job is gone (renamed).
func oneJob(cm, named *object, name string, mounting []*object) error {
	switch {
	case len(mounting) == 0 && named != nil:
		return fmt.Errorf("broker ConfigMap %s names Job %q in its parameters, but that Job does not mount it (no pod volume with configMap.name: %s); mount the broker ConfigMap in the Job's pods", ref(cm), name, cm.name)
	case len(mounting) == 0:
		return fmt.Errorf("broker ConfigMap %s is mounted by no Job in namespace %s (its parameters name Job %q, which is not among the manifests); keep the chart's Job and its broker-config volume", ref(cm), cm.namespace, name)
	case len(mounting) > 1:
		return fmt.Errorf("broker ConfigMap %s is mounted by %d Jobs (%s and %s); each MiniCluster needs its own broker ConfigMap", ref(cm), len(mounting), mounting[0].name, mounting[1].name)
	case named != nil && named != mounting[0]:
		return fmt.Errorf("broker ConfigMap %s names Job %q in its parameters but is mounted by Job %q; a broker ConfigMap belongs to one MiniCluster: give each Job its own", ref(cm), name, mounting[0].name)
	}
	return nil
}

// podService follows the Job's pod subdomain to the headless Service that gives the pods DNS
// names: after a kustomization, the subdomain carries the Service's new name.
func podService(job *object, objs []*object) (*object, error) {
	subdomain := scalar(job.node, "spec", "template", "spec", "subdomain")
	if subdomain == "" {
		return nil, fmt.Errorf("the Job %s has no spec.template.spec.subdomain: its pods get no DNS names; set it to the name of the MiniCluster's headless Service", ref(job))
	}
	svc := find(objs, "v1", "Service", job.namespace, subdomain)
	if svc == nil {
		return nil, fmt.Errorf("the Job %s has subdomain %q, but there is no Service %q in namespace %s (Services there: %s); the subdomain must name the MiniCluster's headless Service", ref(job), subdomain, subdomain, job.namespace, serviceNames(objs, job.namespace))
	}
	return svc, nil
}
