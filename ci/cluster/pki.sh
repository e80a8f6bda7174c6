#!/usr/bin/env bash
# pki.sh, sourced by up.sh: the cluster's CA, the certificates of the API server, its clients and
# every kubelet, the service account key, and the kubeconfigs of the admin and the components.
# Reads PKI, CONF, KUBECONFIG_FILE, NODES and the node addresses from up.sh.
rm -rf "$PKI"
mkdir -p "$PKI"
chmod 700 "$PKI"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
	-subj "/CN=minicluster-ca" -keyout "$PKI/ca.key" -out "$PKI/ca.crt" \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
# cert NAME SUBJECT USAGES [SANS]: a key and a certificate signed by the cluster CA.
cert() {
	local name=$1 subject=$2 usages=$3 sans=${4:-}
	{
		echo "basicConstraints=critical,CA:FALSE"
		echo "keyUsage=critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=$usages"
		[[ -n $sans ]] && echo "subjectAltName=$sans"
	} >"$PKI/$name.ext"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "$subject" \
		-keyout "$PKI/$name.key" 2>/dev/null |
		openssl x509 -req -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
			-days 3650 -sha256 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.ext"
}
cert apiserver "/CN=kube-apiserver" serverAuth \
	"DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,IP:127.0.0.1,IP:$API_SERVICE_IP,IP:$NODE_IP"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
cert admin "/O=system:masters/CN=minicluster-admin" clientAuth
cert front-proxy-client "/CN=front-proxy-client" clientAuth
cert controller-manager "/CN=system:kube-controller-manager" clientAuth
cert scheduler "/CN=system:kube-scheduler" clientAuth
cert kube-proxy "/CN=system:kube-proxy" clientAuth
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	cert "kubelet$N_SFX" "/O=system:nodes/CN=system:node:$N_NAME" serverAuth,clientAuth "DNS:$N_NAME,DNS:localhost,IP:$N_IP,IP:127.0.0.1"
done
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"

# kubeconfig FILE CERTNAME: a kubeconfig for the API server on the node IP, with embedded data.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: minicluster
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority-data: $(base64 -w0 <"$PKI/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$PKI/$2.crt")
    client-key-data: $(base64 -w0 <"$PKI/$2.key")
contexts:
- name: minicluster
  context:
    cluster: minicluster
    user: $2
current-context: minicluster
EOF
	chmod 600 "$1"
}
mkdir -p "$CONF"
kubeconfig "$KUBECONFIG_FILE" admin
for c in controller-manager scheduler kube-proxy; do kubeconfig "$CONF/$c.kubeconfig" "$c"; done
for ((k = 1; k <= NODES; k++)); do
	node_vars "$k"
	kubeconfig "$CONF/kubelet$N_SFX.kubeconfig" "kubelet$N_SFX"
done

