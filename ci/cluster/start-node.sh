#!/usr/bin/env bash
# start-node.sh, sourced by up.sh: how one node's kubelet and kube-proxy are started.
# start_node: node N_*'s kubelet and kube-proxy, in its namespace.
start_node() {
	mkdir -p "$N_DIR/kubelet" "$N_DIR/pod-logs"
	cat >"$CONF/kubelet$N_SFX.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$PKI/kubelet$N_SFX.crt"
tlsPrivateKeyFile: "$PKI/kubelet$N_SFX.key"
containerRuntimeEndpoint: "unix://$N_SOCK"
cgroupDriver: cgroupfs
cgroupRoot: /$N_CGROUP
# Kubernetes 1.35 refuses cgroup v1 unless told otherwise.
failCgroupV1: false
failSwapOn: false
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: ["$NODE_IP"]
resolvConf: "$CONF/pod-resolv.conf"
podLogsDir: "$N_DIR/pod-logs"
volumePluginDir: "$N_DIR/kubelet/volume-plugins"
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
serializeImagePulls: false
maxPods: ${KUBELET_MAX_PODS:-110}
# A busy disk must not evict test pods; locally imported images must never be collected.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%", imagefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# The images load-images.sh imports are also pushed to \$CLUSTER_REGISTRY and pulled from there
# under another name: one image ID. Since 1.35 (KubeletEnsureSecretPulledImages) a kubelet that
# pulled an image ID itself lets pods use it under another name only after pulling that name
# too, so the imported names would fail (ErrImageNeverPull; ErrImagePull from ghcr.io or
# localhost). NeverVerify: any pod may use any image on the node, as before 1.35. Only the login
# registry's test wants a pull secret, and it pulls with policy Always.
imagePullCredentialsVerificationPolicy: NeverVerify
EOF
	# Every kubelet binds the same fixed path for device plugins and removes what it finds there
	# first: started together, one removes the socket another is binding (EADDRINUSE, the kubelet
	# exits). One at a time: each starts once the one before it listens.
	rm -f /var/lib/kubelet/device-plugins/kubelet.sock
	start_kubelet
	wait_for "kubelet$N_SFX" 60 "kubelet $N_NAME to listen for device plugins" test -S /var/lib/kubelet/device-plugins/kubelet.sock

	cat >"$CONF/kube-proxy$N_SFX.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$CONF/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $N_NAME
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the host-wide conntrack sysctls alone.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
nodePortAddresses: [primary]
EOF
	start_kube_proxy
	start_netpol
}
