#!/usr/bin/env bash
# containerd-conf.sh, sourced by up.sh: what each node's containerd is configured with.
# containerd_conf: node N_*'s containerd configuration and its pods' CNI network.
containerd_conf() {
	local cd=$N_DIR/containerd
	mkdir -p "$cd/root" "$cd/state" "$N_DIR/run" "$N_DIR/cni/net.d" "$N_DIR/cni/ipam"
	# containerd 2 (ci/cluster/build.sh): configuration version 3. Nothing from the host's
	# /etc/containerd is imported, and NRI (a socket under /var/run) is off.
	cat >"$CONF/containerd$N_SFX.toml" <<EOF
version = 3
root = "$cd/root"
state = "$cd/state"
imports = []
disabled_plugins = ["io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.nri.v1.nri"]

[grpc]
  address = "$N_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$cd/opt"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"

  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "localhost/minicluster/pause:local"

  # Registry hosts: <config_path>/<host:port>/hosts.toml (the cluster's registry is plain HTTP).
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$CONF/certs.d"

[plugins."io.containerd.cri.v1.runtime"]
  # No CAP_SYS_RESOURCE here: without this every sandbox fails ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_cdi = false

  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"

    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$cd/state/runc"

  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$N_DIR/cni/net.d"
EOF
	# No ipMasq: pods reach pods on other nodes with their own addresses, by the nodes' routes
	# (kube-proxy masquerades what Services need).
	cat >"$N_DIR/cni/net.d/10-minicluster.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "minicluster",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$N_DIR/cni/ipam",
        "ranges": [[{"subnet": "$N_POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}
