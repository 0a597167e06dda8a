//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// Prometheus: GEMINI_MCP_PROMETHEUS names the prometheus executable the
// metrics test scrapes the server with (scripts/test.sh installs Debian's);
// without it the test is skipped, unless GEMINI_MCP_PROMETHEUS_REQUIRED=1
// (scripts/test.sh sets it), when it fails.
const (
	envPrometheus         = "GEMINI_MCP_PROMETHEUS"
	envPrometheusRequired = "GEMINI_MCP_PROMETHEUS_REQUIRED"
)

// promJob is the scrape job's name in the test's configuration.
const promJob = "gemini-mcp-server"

// prometheus is a real Prometheus server on a loopback port, scraping one
// target every second, its storage in a temporary directory.
type prometheus struct {
	base string // http://127.0.0.1:PORT
}

// startPrometheus starts Prometheus scraping target (host:port, path
// /metrics) and stops it when the test ends.
func startPrometheus(t *testing.T, target string) *prometheus {
	t.Helper()
	bin := os.Getenv(envPrometheus)
	if bin == "" {
		msg := envPrometheus + " is not set (the prometheus executable, e.g. /usr/bin/prometheus from Debian's package)"
		if os.Getenv(envPrometheusRequired) == "1" {
			t.Fatalf("%s; required because %s=1", msg, envPrometheusRequired)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: %s
    metrics_path: /metrics
    static_configs:
      - targets: [%q]
`, promJob, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// Prometheus does not report the port it bound, so it gets a free one;
	// another process may take it meanwhile, then the start is retried.
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		stderr := &geminitest.LockedBuffer{}
		cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
			"--web.listen-address="+addr, "--log.level=info")
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = stderr, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		stop := func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
		}
		p := &prometheus{base: "http://" + addr}
		switch p.waitReady(t, exited) {
		case nil:
			t.Cleanup(func() {
				stop()
				if t.Failed() {
					t.Logf("prometheus output:\n%s", stderr.String())
				}
			})
			return p
		default:
			stop()
			if attempt < 2 && strings.Contains(stderr.String(), "address already in use") {
				continue
			}
			t.Fatalf("prometheus did not become ready:\n%s", stderr.String())
		}
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitReady polls /-/ready until it answers 200, Prometheus exits or a
// minute passes.
func (p *prometheus) waitReady(t *testing.T, exited <-chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(p.base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("prometheus exited")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// query runs an instant query and returns its vector's values by their
// labels as Prometheus prints them.
func (p *prometheus) query(t *testing.T, q string) []float64 {
	t.Helper()
	resp, err := http.Get(p.base + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Status != "success" || r.Data.ResultType != "vector" {
		t.Fatalf("query %s: %v %s", q, err, body)
	}
	var out []float64
	for _, s := range r.Data.Result {
		str, _ := s.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			t.Fatalf("query %s: value %v", q, s.Value)
		}
		out = append(out, v)
	}
	return out
}

// waitFor polls query q until it gives the single value want, or fails
// after a minute (Prometheus' first scrape comes within seconds).
func (p *prometheus) waitFor(t *testing.T, q string, want float64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := p.query(t, q)
		if len(got) == 1 && got[0] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v after a minute, want %v; targets: %s", q, got, want, p.targets(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// targets is the scrape targets' report: health, last error.
func (p *prometheus) targets(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(p.base + "/api/v1/targets")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(body)
}

// TestPrometheusScrapes: a real Prometheus scrapes the server's /metrics
// (a parse error would show as up 0 and in the target's lastError) and
// answers queries with the calls made and the tokens they used.
func TestPrometheusScrapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr, maddr, _ := startWithMetrics(t, e, "--rate-limits", "sessions=1/h")
	cs := httpClient(t, addr, "")
	metricsCalls(t, cs)
	p := startPrometheus(t, maddr)
	p.waitFor(t, `up{job="`+promJob+`"}`, 1)

	var targets struct {
		Data struct {
			ActiveTargets []struct {
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(p.targets(t)), &targets); err != nil || len(targets.Data.ActiveTargets) != 1 ||
		targets.Data.ActiveTargets[0].Health != "up" || targets.Data.ActiveTargets[0].LastError != "" {
		t.Fatalf("targets: %v %+v", err, targets)
	}
	// The six tools/call requests of metricsCalls.
	p.waitFor(t, `sum(mcp_server_operation_duration_seconds_count{job="`+promJob+`",mcp_method_name="tools/call"})`, 6)
	p.waitFor(t, `sum(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",error_type="tool_error"})`, 2)
	p.waitFor(t, `sum(gen_ai_client_token_usage_sum{gen_ai_token_type="input",backend="oneshot"})`, 2)
	p.waitFor(t, `sum(gen_ai_client_token_usage_count{gen_ai_token_type="output",gen_ai_request_model="default"})`, 2)
	p.waitFor(t, `gemini_mcp_rate_limited_total{gen_ai_tool_name="sessions"}`, 1)
	// The histogram parsed as one: a quantile over its buckets.
	if q := p.query(t, `histogram_quantile(1, sum by (le) (mcp_server_operation_duration_seconds_bucket{gen_ai_tool_name="chat"}))`); len(q) != 1 || !(q[0] > 0) {
		t.Errorf("quantile of the chat calls' durations: %v", q)
	}
}
