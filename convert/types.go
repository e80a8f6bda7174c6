package convert

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Flux Operator's MiniCluster (flux-framework.org/v1alpha2), field for field with the json
// names of its api/v1alpha2/minicluster_types.go, so that a strict decode refuses a field the
// operator does not have. TestTypesMatchOperator holds these structs to that file.

// miniCluster is one MiniCluster document.
type miniCluster struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        objectMeta      `json:"metadata"`
	Spec            miniClusterSpec `json:"spec"`
	Status          map[string]any  `json:"status,omitempty"`
}

// objectMeta is the part of a MiniCluster's metadata that says where it goes.
type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type miniClusterSpec struct {
	Containers            []miniClusterContainer `json:"containers"`
	Services              []miniClusterContainer `json:"services"`
	Network               network                `json:"network"`
	JobLabels             map[string]string      `json:"jobLabels"`
	Interactive           bool                   `json:"interactive"`
	Flux                  fluxSpec               `json:"flux"`
	Logging               loggingSpec            `json:"logging"`
	Archive               miniClusterArchive     `json:"archive"`
	ShareProcessNamespace bool                   `json:"shareProcessNamespace"`
	Cleanup               bool                   `json:"cleanup,omitempty"`
	Size                  int32                  `json:"size,omitempty"`
	MaxSize               int32                  `json:"maxSize,omitempty"`
	BackoffLimit          int32                  `json:"backoffLimit,omitempty"`
	MinSize               int32                  `json:"minSize,omitempty"`
	Tasks                 *int32                 `json:"tasks,omitempty"`
	DeadlineSeconds       int64                  `json:"deadlineSeconds,omitempty"`
	Pod                   podSpec                `json:"pod"`
}

type network struct {
	HeadlessName    string `json:"headlessName,omitempty"`
	DisableAffinity bool   `json:"disableAffinity,omitempty"`
}

type miniClusterArchive struct {
	Path string `json:"path,omitempty"`
}

type loggingSpec struct {
	Quiet  bool `json:"quiet,omitempty"`
	Strict bool `json:"strict,omitempty"`
	Debug  bool `json:"debug,omitempty"`
	Zeromq bool `json:"zeromq,omitempty"`
	Timed  bool `json:"timed,omitempty"`
}

type podSpec struct {
	Annotations                  map[string]string         `json:"annotations"`
	Labels                       map[string]string         `json:"labels"`
	RestartPolicy                string                    `json:"restartPolicy,omitempty"`
	ServiceAccountName           string                    `json:"serviceAccountName,omitempty"`
	RuntimeClassName             string                    `json:"runtimeClassName,omitempty"`
	AutomountServiceAccountToken bool                      `json:"automountServiceAccountToken,omitempty"`
	SchedulerName                string                    `json:"schedulerName,omitempty"`
	NodeSelector                 map[string]string         `json:"nodeSelector,omitempty"`
	NodeAffinity                 map[string][]string       `json:"nodeAffinity,omitempty"`
	Tolerations                  []toleration              `json:"tolerations,omitempty"`
	DNSPolicy                    string                    `json:"dnsPolicy,omitempty"`
	HostIPC                      bool                      `json:"hostIPC,omitempty"`
	HostPID                      bool                      `json:"hostPID,omitempty"`
	Resources                    corev1.ResourceList       `json:"resources"`
	SecurityContext              corev1.PodSecurityContext `json:"securityContext,omitempty"`
}

type toleration struct {
	Key      string `json:"key,omitempty"`
	Effect   string `json:"effect,omitempty"`
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
}

type containerVolume struct {
	Path                string            `json:"path,omitempty"`
	HostPath            string            `json:"hostPath,omitempty"`
	ConfigMapName       string            `json:"configMapName,omitempty"`
	Items               map[string]string `json:"items"`
	ClaimName           string            `json:"claimName,omitempty"`
	SecretName          string            `json:"secretName,omitempty"`
	ReadOnly            bool              `json:"readOnly,omitempty"`
	EmptyDirMedium      string            `json:"emptyDirMedium,omitempty"`
	EmptyDirSizeLimit   string            `json:"emptyDirSizeLimit,omitempty"`
	CSIDriver           string            `json:"csiDriver,omitempty"`
	CSIDriverAttributes map[string]string `json:"csiDriverAttributes"`
	EmptyDir            bool              `json:"emptyDir,omitempty"`
}

type fluxSpec struct {
	Container       fluxContainer     `json:"container,omitempty"`
	Arch            string            `json:"arch,omitempty"`
	SubmitCommand   string            `json:"submitCommand,omitempty"`
	Wrap            string            `json:"wrap,omitempty"`
	ConnectTimeout  string            `json:"connectTimeout,omitempty"`
	OptionFlags     string            `json:"optionFlags"`
	MinimalService  bool              `json:"minimalService"`
	DisableSocket   bool              `json:"disableSocket"`
	Topology        string            `json:"topology"`
	NoWaitSocket    bool              `json:"noWaitSocket"`
	CompleteWorkers bool              `json:"completeWorkers"`
	LogLevel        int32             `json:"logLevel,omitempty"`
	CurveCert       string            `json:"curveCert"`
	Scheduler       fluxScheduler     `json:"scheduler"`
	MungeSecret     string            `json:"mungeSecret"`
	Bursting        bursting          `json:"bursting"`
	BrokerConfig    string            `json:"brokerConfig"`
	Environment     map[string]string `json:"environment"`
}

type fluxScheduler struct {
	Simple      bool   `json:"simple"`
	QueuePolicy string `json:"queuePolicy"`
}

type bursting struct {
	LeadBroker fluxBroker       `json:"leadBroker"`
	Hostlist   string           `json:"hostlist"`
	Clusters   []burstedCluster `json:"clusters"`
}

type burstedCluster struct {
	Name string `json:"name"`
	Size int32  `json:"size,omitempty"`
}

type fluxBroker struct {
	Address string `json:"address"`
	Name    string `json:"name"`
	Size    int32  `json:"size"`
	Port    int32  `json:"port,omitempty"`
}

type fluxContainer struct {
	Disable         bool                        `json:"disable,omitempty"`
	Name            string                      `json:"name,omitempty"`
	WorkingDir      string                      `json:"workingDir"`
	PythonPath      string                      `json:"pythonPath"`
	Resources       corev1.ResourceRequirements `json:"resources"`
	ImagePullSecret string                      `json:"imagePullSecret"`
	Image           string                      `json:"image,omitempty"`
	PullAlways      bool                        `json:"pullAlways,omitempty"`
	SecurityContext corev1.SecurityContext      `json:"securityContext,omitempty"`
	MountPath       string                      `json:"mountPath,omitempty"`
}

type miniClusterContainer struct {
	ImagePullSecret  string                      `json:"imagePullSecret"`
	Image            string                      `json:"image,omitempty"`
	WorkingDir       string                      `json:"workingDir"`
	Name             string                      `json:"name"`
	Command          string                      `json:"command"`
	PullAlways       bool                        `json:"pullAlways,omitempty"`
	ImagePullPolicy  string                      `json:"imagePullPolicy,omitempty"`
	Ports            []int32                     `json:"ports"`
	Environment      map[string]string           `json:"environment"`
	Secrets          map[string]secret           `json:"secrets"`
	Launcher         bool                        `json:"launcher"`
	Batch            bool                        `json:"batch"`
	BatchRaw         bool                        `json:"batchRaw"`
	Logs             string                      `json:"logs"`
	RunFlux          bool                        `json:"runFlux"`
	NoWrapEntrypoint bool                        `json:"noWrapEntrypoint"`
	Volumes          map[string]containerVolume  `json:"volumes"`
	LifeCycle        lifeCycle                   `json:"lifeCycle"`
	Resources        corev1.ResourceRequirements `json:"resources"`
	Commands         commands                    `json:"commands"`
	SecurityContext  corev1.SecurityContext      `json:"securityContext,omitempty"`
}

type lifeCycle struct {
	PostStartExec string `json:"postStartExec"`
	PreStopExec   string `json:"preStopExec"`
}

type secret struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

type commands struct {
	Prefix     string `json:"prefix"`
	Script     string `json:"script"`
	Init       string `json:"init"`
	Pre        string `json:"pre"`
	Post       string `json:"post"`
	WorkerPre  string `json:"workerPre"`
	BrokerPre  string `json:"brokerPre"`
	ServicePre string `json:"servicePre"`
}
