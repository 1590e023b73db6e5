package main

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	gobuild "go/build"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// k8sObject is the part of a Kubernetes object the manifests' check reads.
type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Resources []string `yaml:"resources"` // Kustomization
	Patches   []struct {
		Path string `yaml:"path"`
	} `yaml:"patches"`
	StringData map[string]string `yaml:"stringData"` // Secret
	Spec       struct {
		Replicas *int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Template struct {
			Spec k8sPodSpec `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct { // Service
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
		Ingress []struct { // NetworkPolicy
			Ports []struct {
				Port int `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	} `yaml:"spec"`
}

type k8sPodSpec struct {
	SecurityContext struct {
		RunAsNonRoot bool `yaml:"runAsNonRoot"`
		RunAsUser    int  `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers []struct {
		Name    string   `yaml:"name"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		} `yaml:"securityContext"`
	} `yaml:"containers"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

// readManifests decodes every document of every YAML file under deploy/,
// by path below it.
func readManifests(t *testing.T) map[string][]k8sObject {
	t.Helper()
	out := map[string][]k8sObject{}
	err := filepath.WalkDir("../../deploy", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../../deploy", path)
		objs, err := decodeManifests(b)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		for _, o := range objs {
			if o.APIVersion == "" || o.Kind == "" || (o.Metadata.Name == "" && o.Kind != "Kustomization") {
				t.Errorf("%s: a document without apiVersion, kind or metadata.name: %+v", rel, o)
			}
		}
		out[filepath.ToSlash(rel)] = objs
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("deploy/: %v (%d files)", err, len(out))
	}
	return out
}

func decodeManifests(b []byte) ([]k8sObject, error) {
	var objs []k8sObject
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
}

// kustomize builds a kustomization directory with kubectl's kustomize or
// the kustomize binary (`make deps` installs it with go install when
// neither is on the machine).
func kustomize(t *testing.T, dir string) []k8sObject {
	t.Helper()
	var cmd *exec.Cmd
	if p, err := exec.LookPath("kubectl"); err == nil {
		cmd = exec.Command(p, "kustomize", dir)
	} else if p, err := exec.LookPath("kustomize"); err == nil {
		cmd = exec.Command(p, "build", dir)
	} else if p := filepath.Join(gobuild.Default.GOPATH, "bin", "kustomize"); fileExists(p) {
		cmd = exec.Command(p, "build", dir)
	} else {
		t.Fatal("neither kubectl nor kustomize: run make deps, or go install sigs.k8s.io/kustomize/kustomize/v5@v5.7.1")
	}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s: %v\n%s", cmd, err, ee.Stderr)
		}
		t.Fatalf("%s: %v", cmd, err)
	}
	objs, err := decodeManifests(out)
	if err != nil {
		t.Fatalf("%s: its output: %v", cmd, err)
	}
	return objs
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dockerfile reads the Dockerfile's runtime stage: its USER, EXPOSEd ports
// and ENV.
func dockerfile(t *testing.T) (user string, exposed []int, env map[string]string) {
	t.Helper()
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	env = map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "FROM": // a new stage: only the last one's settings count
			user, exposed, env = "", nil, map[string]string{}
		case "USER":
			user = fields[1]
		case "EXPOSE":
			for _, p := range fields[1:] {
				n, err := strconv.Atoi(strings.TrimSuffix(p, "/tcp"))
				if err != nil {
					t.Fatalf("Dockerfile: EXPOSE %s", p)
				}
				exposed = append(exposed, n)
			}
		case "ENV":
			k, v, _ := strings.Cut(fields[1], "=")
			env[k] = v
		}
	}
	return user, exposed, env
}

// distrolessUsers are the users distroless's images define, by name: the
// Dockerfile's USER names one, the manifests give its number (Kubernetes'
// runAsNonRoot cannot check a name).
var distrolessUsers = map[string]int{"nonroot": 65532, "root": 0}

// The manifests in deploy/, offline: every file parses and is in the
// kustomization (the example Secret aside), every flag and environment
// variable the container uses exists in `zklockviz serve --help`, the user
// and ports are the Dockerfile's, the probes ask /healthz on the served
// port, the pod runs non-root on a read-only root filesystem with requests
// and limits, and every Secret key it reads is in the example Secret.
func TestDeployManifests(t *testing.T) {
	manifests := readManifests(t)
	code, help, stderr := runBinary(t, nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help: exit %d\n%s", code, stderr)
	}
	helpFlags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(--[a-z0-9-]+)`).FindAllStringSubmatch(help, -1) {
		helpFlags[m[1]] = true
	}
	helpEnv := map[string]bool{}
	for _, name := range regexp.MustCompile(`ZKLOCKVIZ_[A-Z0-9_]+`).FindAllString(help, -1) {
		helpEnv[name] = true
	}
	user, exposed, dockerEnv := dockerfile(t)
	uid, ok := distrolessUsers[strings.Split(user, ":")[0]]
	if !ok {
		t.Fatalf("Dockerfile: USER %q is not a distroless user this test knows", user)
	}
	_, dockerPort, _ := strings.Cut(dockerEnv["ZKLOCKVIZ_ADDR"], ":")

	// Every file is in a kustomization (as a resource or a patch), the
	// example Secret aside, and every file a kustomization names exists.
	referenced := map[string]bool{}
	secretKeys := map[string]bool{}
	for file, objs := range manifests {
		dir := path.Dir(file)
		for _, o := range objs {
			switch o.Kind {
			case "Kustomization":
				refs := o.Resources
				for _, p := range o.Patches {
					if p.Path != "" {
						refs = append(refs, p.Path)
					}
				}
				for _, r := range refs {
					r = path.Join(dir, r)
					_, isFile := manifests[r]
					_, isDir := manifests[path.Join(r, "kustomization.yaml")]
					if !isFile && !isDir {
						t.Errorf("%s lists %s, which deploy/ does not have", file, r)
					}
					referenced[r] = true
				}
			case "Secret":
				for k := range o.StringData {
					secretKeys[o.Metadata.Name+"/"+k] = true
				}
			}
		}
	}
	for file := range manifests {
		if path.Base(file) == "kustomization.yaml" {
			continue
		}
		if example := strings.HasSuffix(file, ".example.yaml"); referenced[file] == example {
			t.Errorf("%s: in a kustomization: %v; want every file but the examples", file, referenced[file])
		}
	}

	// Each setup as kustomize builds it: one replica on the built-in store,
	// and two sharing a PostgreSQL history.
	setups := []struct {
		dir      string
		replicas int
		strategy string
		env      []string // set in the container
		unset    []string
		kinds    []string
	}{
		{".", 1, "Recreate", []string{"ZKLOCKVIZ_DATA_DIR"}, []string{"ZKLOCKVIZ_HISTORY_DB"}, []string{"Deployment", "NetworkPolicy", "PersistentVolumeClaim", "Service"}},
		{"replicas", 2, "RollingUpdate", []string{"ZKLOCKVIZ_HISTORY_DB", "ZKLOCKVIZ_HISTORY_REPLICA"}, []string{"ZKLOCKVIZ_DATA_DIR"}, []string{"Deployment", "NetworkPolicy", "Service"}},
	}
	for _, setup := range setups {
		objs := kustomize(t, filepath.Join("../../deploy", setup.dir))
		file := path.Join("deploy", setup.dir)
		var kinds []string
		for _, o := range objs {
			kinds = append(kinds, o.Kind)
		}
		slices.Sort(kinds)
		if !slices.Equal(kinds, setup.kinds) {
			t.Errorf("%s builds %v, want %v", file, kinds, setup.kinds)
		}
		checkDeployment(t, file, objs, deploymentWant{
			uid: uid, user: user, exposed: exposed, port: dockerPort, helpFlags: helpFlags, helpEnv: helpEnv,
			secretKeys: secretKeys, replicas: setup.replicas, strategy: setup.strategy, env: setup.env, unset: setup.unset,
		})
	}
}

// deploymentWant is what a built setup's Deployment must be.
type deploymentWant struct {
	uid                int
	user, port         string
	exposed            []int
	helpFlags, helpEnv map[string]bool
	secretKeys         map[string]bool
	replicas           int
	strategy           string
	env, unset         []string
}

// checkDeployment checks a built setup: its Deployment runs serve as the
// image's non-root user on a read-only root filesystem, with requests and
// limits, flags and environment variables serve --help knows, Secret keys
// the example Secret has, probes of /healthz on the Dockerfile's port, and
// the replicas and environment the setup wants; its Service and
// NetworkPolicy use that port.
func checkDeployment(t *testing.T, file string, objs []k8sObject, want deploymentWant) {
	t.Helper()
	var deployments int
	ports := map[string]int{} // the container's named ports
	for _, o := range objs {
		if o.Kind != "Deployment" {
			continue
		}
		deployments++
		pod := o.Spec.Template.Spec
		if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser != want.uid {
			t.Errorf("%s: runAsNonRoot %v, runAsUser %d; the Dockerfile's USER %s is %d",
				file, pod.SecurityContext.RunAsNonRoot, pod.SecurityContext.RunAsUser, want.user, want.uid)
		}
		// The built-in store is a directory one process locks: one
		// replica, and a new pod only once the old one is gone. Replicas
		// sharing a PostgreSQL history choose their recorder among
		// themselves, so a new pod may start before the old one goes.
		if replicas := cmp.Or(o.Spec.Replicas, new(0)); *replicas != want.replicas || o.Spec.Strategy.Type != want.strategy {
			t.Errorf("%s: replicas %d, strategy %q: want %d replicas replaced with %s", file, *replicas, o.Spec.Strategy.Type, want.replicas, want.strategy)
		}
		for _, c := range pod.Containers {
			if len(c.Command) > 0 {
				t.Errorf("%s: container %s replaces the image's entrypoint", file, c.Name)
			}
			if len(c.Args) == 0 || c.Args[0] != "serve" {
				t.Errorf("%s: container %s args %q: want serve ...", file, c.Name, c.Args)
			}
			for _, a := range c.Args[1:] {
				name, _, _ := strings.Cut(a, "=")
				if strings.HasPrefix(name, "--") && !want.helpFlags[name] {
					t.Errorf("%s: %s is not in serve --help", file, name)
				}
			}
			set := map[string]bool{}
			for _, e := range c.Env {
				set[e.Name] = true
				if strings.HasPrefix(e.Name, "ZKLOCKVIZ_") && !want.helpEnv[e.Name] {
					t.Errorf("%s: env %s is not in serve --help", file, e.Name)
				}
				if ref := e.ValueFrom.SecretKeyRef; ref != nil && !want.secretKeys[ref.Name+"/"+ref.Key] {
					t.Errorf("%s: env %s reads secret %s key %s, which secret.example.yaml lacks", file, e.Name, ref.Name, ref.Key)
				}
				if e.Name == "ZKLOCKVIZ_ADDR" {
					if _, p, _ := strings.Cut(e.Value, ":"); p != want.port {
						t.Errorf("%s: ZKLOCKVIZ_ADDR %s; the Dockerfile's port is %s", file, e.Value, want.port)
					}
				}
			}
			for _, e := range want.env {
				if !set[e] {
					t.Errorf("%s: container %s does not set %s", file, c.Name, e)
				}
			}
			for _, e := range want.unset {
				if set[e] {
					t.Errorf("%s: container %s sets %s", file, c.Name, e)
				}
			}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
				if !slices.Contains(want.exposed, p.ContainerPort) || strconv.Itoa(p.ContainerPort) != want.port {
					t.Errorf("%s: containerPort %d; the Dockerfile exposes %v and listens on %s", file, p.ContainerPort, want.exposed, want.port)
				}
			}
			for what, probe := range map[string]*k8sProbe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				if probe == nil || probe.HTTPGet.Path != "/healthz" || ports[probe.HTTPGet.Port] == 0 {
					t.Errorf("%s: %s probe %+v: want GET /healthz on a named container port", file, what, probe)
				}
			}
			for _, r := range []string{"cpu", "memory"} {
				if c.Resources.Requests[r] == "" || (r == "memory" && c.Resources.Limits[r] == "") {
					t.Errorf("%s: container %s has no %s request or limit", file, c.Name, r)
				}
			}
			sc := c.SecurityContext
			if !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: container %s: readOnlyRootFilesystem %v, allowPrivilegeEscalation %v", file, c.Name, sc.ReadOnlyRootFilesystem, sc.AllowPrivilegeEscalation)
			}
		}
	}
	if deployments != 1 {
		t.Fatalf("%s: %d Deployments, want 1", file, deployments)
	}
	for _, o := range objs {
		switch o.Kind {
		case "Service":
			for _, p := range o.Spec.Ports {
				if ports[p.TargetPort] == 0 {
					t.Errorf("%s: targetPort %q is no container's named port %v", file, p.TargetPort, ports)
				}
			}
		case "NetworkPolicy":
			for _, in := range o.Spec.Ingress {
				for _, p := range in.Ports {
					if strconv.Itoa(p.Port) != want.port {
						t.Errorf("%s: ingress on port %d; zklockviz listens on %s", file, p.Port, want.port)
					}
				}
			}
		}
	}
}
