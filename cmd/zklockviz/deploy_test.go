package main

import (
	"bufio"
	"errors"
	"io"
	"os"
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
	Resources  []string          `yaml:"resources"`  // Kustomization
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

// readManifests decodes every document of every deploy/*.yaml file, by file.
func readManifests(t *testing.T) map[string][]k8sObject {
	t.Helper()
	files, err := filepath.Glob("../../deploy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no deploy/*.yaml: %v", err)
	}
	out := map[string][]k8sObject{}
	for _, f := range files {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(r)
		for {
			var o k8sObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.APIVersion == "" || o.Kind == "" || (o.Metadata.Name == "" && o.Kind != "Kustomization") {
				t.Errorf("%s: a document without apiVersion, kind or metadata.name: %+v", f, o)
			}
			out[filepath.Base(f)] = append(out[filepath.Base(f)], o)
		}
		r.Close()
	}
	return out
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

	var kustomized []string
	secretKeys := map[string]bool{}
	for _, objs := range manifests {
		for _, o := range objs {
			switch o.Kind {
			case "Kustomization":
				kustomized = append(kustomized, o.Resources...)
			case "Secret":
				for k := range o.StringData {
					secretKeys[o.Metadata.Name+"/"+k] = true
				}
			}
		}
	}
	for file := range manifests {
		inKustomization := slices.Contains(kustomized, file)
		if example := strings.HasSuffix(file, ".example.yaml"); inKustomization == example && file != "kustomization.yaml" {
			t.Errorf("%s: in kustomization.yaml: %v; want every file but the examples", file, inKustomization)
		}
	}
	for _, r := range kustomized {
		if _, ok := manifests[r]; !ok {
			t.Errorf("kustomization.yaml lists %s, which deploy/ does not have", r)
		}
	}

	var deployments int
	ports := map[string]int{} // the container's named ports
	for file, objs := range manifests {
		for _, o := range objs {
			if o.Kind != "Deployment" {
				continue
			}
			deployments++
			pod := o.Spec.Template.Spec
			if !pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.RunAsUser != uid {
				t.Errorf("%s: runAsNonRoot %v, runAsUser %d; the Dockerfile's USER %s is %d",
					file, pod.SecurityContext.RunAsNonRoot, pod.SecurityContext.RunAsUser, user, uid)
			}
			// The built-in store is a directory one process locks: one
			// replica, and a new pod only once the old one is gone. (Replicas
			// sharing a PostgreSQL history need a recorder chosen among
			// them, issue 38's item 3, not built yet.)
			if o.Spec.Replicas == nil || *o.Spec.Replicas != 1 || o.Spec.Strategy.Type != "Recreate" {
				t.Errorf("%s: replicas %v, strategy %q: want 1 replica replaced with Recreate", file, o.Spec.Replicas, o.Spec.Strategy.Type)
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
					if strings.HasPrefix(name, "--") && !helpFlags[name] {
						t.Errorf("%s: %s is not in serve --help", file, name)
					}
				}
				for _, e := range c.Env {
					if strings.HasPrefix(e.Name, "ZKLOCKVIZ_") && !helpEnv[e.Name] {
						t.Errorf("%s: env %s is not in serve --help", file, e.Name)
					}
					if ref := e.ValueFrom.SecretKeyRef; ref != nil && !secretKeys[ref.Name+"/"+ref.Key] {
						t.Errorf("%s: env %s reads secret %s key %s, which secret.example.yaml lacks", file, e.Name, ref.Name, ref.Key)
					}
					if e.Name == "ZKLOCKVIZ_ADDR" {
						if _, p, _ := strings.Cut(e.Value, ":"); p != dockerPort {
							t.Errorf("%s: ZKLOCKVIZ_ADDR %s; the Dockerfile's port is %s", file, e.Value, dockerPort)
						}
					}
				}
				for _, p := range c.Ports {
					ports[p.Name] = p.ContainerPort
					if !slices.Contains(exposed, p.ContainerPort) || strconv.Itoa(p.ContainerPort) != dockerPort {
						t.Errorf("%s: containerPort %d; the Dockerfile exposes %v and listens on %s", file, p.ContainerPort, exposed, dockerPort)
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
	}
	if deployments == 0 {
		t.Fatal("deploy/ has no Deployment")
	}
	for file, objs := range manifests {
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
						if strconv.Itoa(p.Port) != dockerPort {
							t.Errorf("%s: ingress on port %d; zklockviz listens on %s", file, p.Port, dockerPort)
						}
					}
				}
			}
		}
	}
}
