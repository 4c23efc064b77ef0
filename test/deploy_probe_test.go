package test_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"
)

// k8sManifest is what the deploy tests read from docs/deploy/k8s-sidecar.yaml.
type k8sManifest struct {
	secret      map[string]string // stringData of the Secret
	config      string            // the ConfigMap's outbox.yaml
	annotations map[string]string // of the pod template
	containers  []k8sContainer    // init containers, then containers
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
				Key string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		ContainerPort int `yaml:"containerPort"`
	} `yaml:"ports"`
	Readiness *k8sProbe `yaml:"readinessProbe"`
	Liveness  *k8sProbe `yaml:"livenessProbe"`
	Startup   *k8sProbe `yaml:"startupProbe"`
}

type k8sProbe struct {
	Exec *struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
	HTTPGet *struct {
		Host string `yaml:"host"`
		Path string `yaml:"path"`
	} `yaml:"httpGet"`
	TCPSocket *struct {
		Host string `yaml:"host"`
	} `yaml:"tcpSocket"`
}

func readK8sManifest(t *testing.T) *k8sManifest {
	t.Helper()
	f, err := os.Open("../docs/deploy/k8s-sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := &k8sManifest{}
	dec := yaml.NewDecoder(f)
	for {
		var doc struct {
			Kind       string            `yaml:"kind"`
			StringData map[string]string `yaml:"stringData"`
			Data       map[string]string `yaml:"data"`
			Spec       struct {
				Template struct {
					Metadata struct {
						Annotations map[string]string `yaml:"annotations"`
					} `yaml:"metadata"`
					Spec struct {
						InitContainers []k8sContainer `yaml:"initContainers"`
						Containers     []k8sContainer `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("k8s-sidecar.yaml: %v", err)
		}
		switch doc.Kind {
		case "Secret":
			m.secret = doc.StringData
		case "ConfigMap":
			m.config = doc.Data["outbox.yaml"]
		case "Deployment", "StatefulSet":
			m.annotations = doc.Spec.Template.Metadata.Annotations
			m.containers = append(doc.Spec.Template.Spec.InitContainers, doc.Spec.Template.Spec.Containers...)
		}
	}
	if m.config == "" || len(m.containers) == 0 {
		t.Fatal("k8s-sidecar.yaml: no ConfigMap outbox.yaml or no workload")
	}
	return m
}

// outbox returns the outbox container and its environment, secrets resolved from the Secret.
func (m *k8sManifest) outbox(t *testing.T) (k8sContainer, map[string]string) {
	t.Helper()
	for _, c := range m.containers {
		if len(c.Args) > 0 && c.Args[0] == "run" {
			env := map[string]string{}
			for _, e := range c.Env {
				v := e.Value
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					v = m.secret[e.ValueFrom.SecretKeyRef.Key]
				}
				env[e.Name] = v
			}
			return c, env
		}
	}
	t.Fatal("k8s-sidecar.yaml: no container runs `outbox run`")
	return k8sContainer{}, nil
}

// configFile writes the ConfigMap's outbox.yaml to a temporary file; paths swaps the manifest's
// mount path for it in args.
func (m *k8sManifest) configFile(t *testing.T) (path string, swap func([]string) []string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "outbox.yaml")
	if err := os.WriteFile(path, []byte(m.config), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func(args []string) []string {
		out := append([]string(nil), args...)
		for i, a := range out {
			if strings.HasSuffix(a, "/outbox.yaml") {
				out[i] = path
			}
		}
		return out
	}
}

// ingestListen is ingest.listen as `outbox config` reports it for the manifest's configuration.
func ingestListen(t *testing.T, cfgPath string, env map[string]string) string {
	t.Helper()
	code, out, stderr := runCLI(t, t.TempDir(), env, "", "config", "--config", cfgPath)
	if code != 0 {
		t.Fatalf("outbox config rejects the manifest's configuration: exit %d: %s", code, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "ingest.listen" {
			return strings.Trim(f[1], `"`)
		}
	}
	t.Fatalf("no ingest.listen in:\n%s", out)
	return ""
}

func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// The kubelet probes from the node: an httpGet or tcpSocket probe reaches the agent only on the
// pod IP (no host, or a host that is not loopback) and only when the agent listens there. An
// exec probe runs in the pod and always can. Prometheus scrapes the pod IP likewise.
func TestK8sSidecar_ProbesAndScrapeTargetReachableAddresses(t *testing.T) {
	m := readK8sManifest(t)
	c, env := m.outbox(t)
	cfg, _ := m.configFile(t)
	listen := ingestListen(t, cfg, env)
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		t.Fatal(err)
	}
	podReachable := !isLoopbackHost(host)
	probes := map[string]*k8sProbe{"readinessProbe": c.Readiness, "livenessProbe": c.Liveness, "startupProbe": c.Startup}
	for name, p := range probes {
		switch {
		case p == nil:
			t.Errorf("%s: the outbox container has no %s", c.Name, name)
		case p.Exec != nil:
			if cmd := p.Exec.Command; len(cmd) < 2 || filepath.Base(cmd[0]) != "outbox" || cmd[1] != "health" {
				t.Errorf("%s: exec %v, want an `outbox health` command", name, cmd)
			}
		case p.HTTPGet != nil && (isLoopbackHost(p.HTTPGet.Host) || !podReachable):
			t.Errorf("%s: httpGet host %q with ingest.listen %s cannot be reached from the node; use an exec probe", name, p.HTTPGet.Host, listen)
		case p.TCPSocket != nil && (isLoopbackHost(p.TCPSocket.Host) || !podReachable):
			t.Errorf("%s: tcpSocket host %q with ingest.listen %s cannot be reached from the node; use an exec probe", name, p.TCPSocket.Host, listen)
		}
	}
	if m.annotations["prometheus.io/scrape"] == "true" {
		if !podReachable {
			t.Errorf("prometheus.io/scrape is on but ingest.listen %s is not reachable on the pod IP", listen)
		}
		if got := m.annotations["prometheus.io/port"]; got != port {
			t.Errorf("prometheus.io/port %q, want the port of ingest.listen %s", got, listen)
		}
		declared := false
		for _, p := range c.Ports {
			declared = declared || p.ContainerPort > 0 && net.JoinHostPort(host, strconv.Itoa(p.ContainerPort)) == listen
		}
		if !declared {
			t.Errorf("the outbox container does not declare containerPort %s", port)
		}
	}
}

// Every exec probe of the manifest, run as written against an agent started with the
// manifest's configuration and environment, passes; once the agent is gone, they fail.
func TestK8sSidecar_ExecProbesPassAgainstTheAgentTheyProbe(t *testing.T) {
	m := readK8sManifest(t)
	c, env := m.outbox(t)
	_, swap := m.configFile(t)
	// Where the test can run it: the data directory and the port are the test's own (the
	// environment beats the file, for the agent and for the probes alike).
	env["OUTBOX_DATA_DIR"] = filepath.Join(t.TempDir(), "data")
	env["OUTBOX_INGEST_LISTEN"] = freeAddr(t)
	agent := start(t, t.TempDir(), env, swap(c.Args)...)
	waitHealthy(t, agent, "http://"+env["OUTBOX_INGEST_LISTEN"])
	var execs [][]string
	for _, p := range []*k8sProbe{c.Startup, c.Readiness, c.Liveness} {
		if p != nil && p.Exec != nil {
			execs = append(execs, p.Exec.Command)
		}
	}
	if len(execs) == 0 {
		t.Fatal("the manifest has no exec probes; its probes must run `outbox health` in the pod")
	}
	for _, cmd := range execs {
		if code, out, stderr := runCLI(t, t.TempDir(), env, "", swap(cmd[1:])...); code != 0 {
			t.Errorf("probe %v against a running agent: exit %d, out %q, err %q", cmd, code, out, stderr)
		}
	}
	agent.signal(t, syscall.SIGTERM)
	if code, _ := agent.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	for _, cmd := range execs {
		if code, _, _ := runCLI(t, t.TempDir(), env, "", swap(cmd[1:])...); code != 1 {
			t.Errorf("probe %v with the agent stopped: exit %d, want 1", cmd, code)
		}
	}
}
