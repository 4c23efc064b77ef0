package test_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/sink/sinktest"
)

// The Kubernetes manifests of docs/deploy/kubernetes, as far as the tests read them.
type k8sDoc struct {
	Kind       string                `yaml:"kind"`
	Metadata   struct{ Name string } `yaml:"metadata"`
	StringData map[string]string     `yaml:"stringData"`
	Spec       struct {
		Ports []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
			Protocol   string `yaml:"protocol"`
		} `yaml:"ports"`
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int            `yaml:"terminationGracePeriodSeconds"`
				InitContainers                []k8sContainer `yaml:"initContainers"`
				Containers                    []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name  string `yaml:"name"`
	Image string `yaml:"image"`
	Args  []string
	Env   []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
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
	Readiness *k8sProbe `yaml:"readinessProbe"`
	Liveness  *k8sProbe `yaml:"livenessProbe"`
	Startup   *k8sProbe `yaml:"startupProbe"`
	Lifecycle struct {
		PreStop *struct {
			Exec struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	VolumeMounts []struct {
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Host string `yaml:"host"`
		Path string `yaml:"path"`
		Port int    `yaml:"port"`
	} `yaml:"httpGet"`
}

// k8sManifest is one manifest file: its documents, its outbox container and grace period.
type k8sManifest struct {
	file     string
	docs     []k8sDoc
	outbox   k8sContainer
	grace    int
	secrets  map[string]map[string]string // Secret name → stringData
	services []k8sDoc
}

var k8sManifests = []string{"../docs/deploy/kubernetes/sidecar.yaml", "../docs/deploy/kubernetes/daemonset.yaml"}

func readK8s(t *testing.T, file string) *k8sManifest {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := &k8sManifest{file: file, secrets: map[string]map[string]string{}}
	dec := yaml.NewDecoder(f)
	found := false
	for {
		var d k8sDoc
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		m.docs = append(m.docs, d)
		switch d.Kind {
		case "Secret":
			m.secrets[d.Metadata.Name] = d.StringData
		case "Service":
			m.services = append(m.services, d)
		case "Deployment", "StatefulSet", "DaemonSet":
			for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
				if strings.Contains(c.Image, "outbox") {
					m.outbox, m.grace, found = c, d.Spec.Template.Spec.TerminationGracePeriodSeconds, true
				}
			}
		}
	}
	if !found {
		t.Fatalf("%s: no workload runs the outbox image", file)
	}
	return m
}

// env is the outbox container's environment with Secret references resolved, failing on a
// reference to a Secret or key the file does not define.
func (m *k8sManifest) env(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range m.outbox.Env {
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			s, ok := m.secrets[ref.Name][ref.Key]
			if !ok {
				t.Errorf("%s: %s refers to Secret %s key %s, which the file does not define", m.file, e.Name, ref.Name, ref.Key)
			}
			v = s
		}
		env[e.Name] = v
	}
	return env
}

// configOf runs `outbox config` with env and returns key → value (quotes trimmed) and the
// "# ignored:" lines.
func configOf(t *testing.T, env map[string]string) (map[string]string, []string) {
	t.Helper()
	code, out, stderr := runCLI(t, t.TempDir(), env, "", "config")
	if code != 0 {
		t.Fatalf("outbox config rejects the environment: exit %d: %s", code, stderr)
	}
	keys, ignored := map[string]string{}, []string{}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "# ignored:") {
			ignored = append(ignored, line)
		} else if f := strings.Fields(line); len(f) >= 2 {
			keys[f[0]] = strings.Trim(f[1], `"`)
		}
	}
	return keys, ignored
}

func TestK8sManifests_AgreeWithTheAgent(t *testing.T) {
	for _, file := range k8sManifests {
		t.Run(file[strings.LastIndex(file, "/")+1:], func(t *testing.T) {
			m := readK8s(t, file)
			env := m.env(t)
			for name := range env {
				if !strings.HasPrefix(name, "OUTBOX_") {
					t.Errorf("%s: env %s: the agent is configured only through OUTBOX_* variables", file, name)
				}
			}
			if len(m.outbox.Args) > 0 {
				t.Errorf("%s: args %v: the configuration belongs in OUTBOX_* variables", file, m.outbox.Args)
			}
			for _, name := range []string{"OUTBOX_UPLOAD_WRITE_KEY", "OUTBOX_INGEST_WRITE_KEYS"} {
				secret := false
				for _, e := range m.outbox.Env {
					secret = secret || e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
				}
				if !secret {
					t.Errorf("%s: %s does not come from a Secret", file, name)
				}
			}
			cfg, ignored := configOf(t, env)
			if len(ignored) > 0 {
				t.Errorf("%s: env names that are not configuration keys:\n%s", file, strings.Join(ignored, "\n"))
			}
			host, port, err := net.SplitHostPort(cfg["ingest.listen"])
			if err != nil || isLoopback(host) {
				t.Errorf("%s: ingest.listen %q: the kubelet and the Service reach the pod IP, not its loopback", file, cfg["ingest.listen"])
			}
			if len(m.outbox.Ports) != 1 || strconv.Itoa(m.outbox.Ports[0].ContainerPort) != port {
				t.Errorf("%s: containerPort %v, want the port of ingest.listen %s", file, m.outbox.Ports, port)
			}
			probes := []struct {
				name  string
				probe *k8sProbe
				path  string
			}{{"readinessProbe", m.outbox.Readiness, "/readyz"}, {"livenessProbe", m.outbox.Liveness, "/healthz"}}
			for _, p := range probes {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("%s: no httpGet %s", file, p.name)
					continue
				}
				if g := p.probe.HTTPGet; g.Path != p.path || strconv.Itoa(g.Port) != port || g.Host != "" {
					t.Errorf("%s: %s %+v, want path %s on port %s of the pod IP", file, p.name, *g, p.path, port)
				}
			}
			if mounts := m.outbox.VolumeMounts; len(mounts) == 0 || mounts[0].MountPath != cfg["data_dir"] {
				t.Errorf("%s: volume mounts %v, want one at data_dir %s", file, mounts, cfg["data_dir"])
			}
			shutdown, err := time.ParseDuration(cfg["shutdown.timeout"])
			if err != nil {
				t.Fatal(err)
			}
			need := shutdown + time.Second
			ps := m.outbox.Lifecycle.PreStop
			if ps == nil || len(ps.Exec.Command) < 2 || ps.Exec.Command[0] != "/usr/bin/outbox" || ps.Exec.Command[1] != "flush" {
				t.Errorf("%s: preStop %v, want /usr/bin/outbox flush --wait D (the image's binary)", file, ps)
			} else {
				for i, a := range ps.Exec.Command {
					if a == "--wait" && i+1 < len(ps.Exec.Command) {
						d, _ := time.ParseDuration(ps.Exec.Command[i+1])
						need += d
					}
				}
			}
			if got := time.Duration(m.grace) * time.Second; got <= need {
				t.Errorf("%s: terminationGracePeriodSeconds %s, want more than preStop + shutdown.timeout + 1s = %s", file, got, need)
			}
		})
	}
}

// serviceEnv is what Kubernetes injects into every pod of a namespace for Service s
// (docker-link style variables included), with a made-up cluster IP.
func serviceEnv(s k8sDoc) map[string]string {
	name := strings.ToUpper(strings.ReplaceAll(s.Metadata.Name, "-", "_"))
	ip := "10.0.0.1"
	env := map[string]string{name + "_SERVICE_HOST": ip}
	for i, p := range s.Spec.Ports {
		proto := strings.ToUpper(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		port := strconv.Itoa(p.Port)
		prefix := fmt.Sprintf("%s_PORT_%s_%s", name, port, proto)
		if i == 0 {
			env[name+"_SERVICE_PORT"] = port
			env[name+"_PORT"] = strings.ToLower(proto) + "://" + ip + ":" + port
		}
		if p.Name != "" {
			env[name+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))] = port
		}
		env[prefix] = strings.ToLower(proto) + "://" + ip + ":" + port
		env[prefix+"_PROTO"] = strings.ToLower(proto)
		env[prefix+"_PORT"] = port
		env[prefix+"_ADDR"] = ip
	}
	return env
}

// The DaemonSet's agent, in a namespace with its Service named outbox: it starts with the
// manifest's environment plus the Service's injected variables, its probes answer, its preStop
// command succeeds, and SIGTERM stops it cleanly.
func TestK8sDaemonSet_ServiceNamedOutboxEnvDoesNotStopTheAgent_ProbesAndPreStopWork(t *testing.T) {
	m := readK8s(t, "../docs/deploy/kubernetes/daemonset.yaml")
	var svc *k8sDoc
	for i := range m.services {
		if m.services[i].Metadata.Name == "outbox" {
			svc = &m.services[i]
		}
	}
	if svc == nil {
		t.Fatal("daemonset.yaml has no Service named outbox")
	}
	env := m.env(t)
	injected := serviceEnv(*svc)
	for k, v := range injected {
		env[k] = v
	}
	for _, want := range []string{"OUTBOX_PORT", "OUTBOX_SERVICE_HOST", "OUTBOX_SERVICE_PORT", "OUTBOX_PORT_8089_TCP"} {
		if _, ok := injected[want]; !ok {
			t.Errorf("the Service does not inject %s; its port is not 8089/TCP", want)
		}
	}
	// The test's own data directory, loopback port and collector; everything else as written.
	s := sinktest.StartScript(t, "ok").URL()
	listen := testutil.FreeAddr(t)
	env["OUTBOX_DATA_DIR"] = t.TempDir()
	env["OUTBOX_INGEST_LISTEN"] = listen
	env["OUTBOX_UPLOAD_ENDPOINT"] = s + "/v1/batch"
	env["OUTBOX_SHUTDOWN_TIMEOUT"] = "2s"
	p := start(t, t.TempDir(), env, "run")
	waitHealthy(t, p, "http://"+listen)
	for _, probe := range []*k8sProbe{m.outbox.Readiness, m.outbox.Liveness, m.outbox.Startup} {
		resp, err := http.Get("http://" + listen + probe.HTTPGet.Path)
		if err != nil {
			t.Fatalf("probe %s: %v", probe.HTTPGet.Path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("probe %s: %d, want 200", probe.HTTPGet.Path, resp.StatusCode)
		}
	}
	if code, out, stderr := runCLI(t, t.TempDir(), env, "", m.outbox.Lifecycle.PreStop.Exec.Command[1:]...); code != 0 {
		t.Errorf("preStop %v: exit %d\n%s%s", m.outbox.Lifecycle.PreStop.Exec.Command, code, out, stderr)
	}
	p.signal(t, syscall.SIGTERM)
	if code, _ := p.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	for name := range injected {
		if !strings.Contains(p.stderr.String(), `"variable":"`+name+`"`) { // log.format json, as in the manifest
			t.Errorf("the agent did not report the injected %s", name)
		}
	}
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
