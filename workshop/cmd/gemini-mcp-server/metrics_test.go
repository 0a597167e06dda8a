package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

var metricsAddrRE = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// startWithMetrics starts the binary with --http and --metrics on free
// loopback ports and returns both addresses.
func startWithMetrics(t *testing.T, e *env, args ...string) (addr, metricsAddr string, stop func() error) {
	t.Helper()
	addr, stop, log := startHTTPCmd(t, e.command(append([]string{"--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0"}, args...)...))
	m := metricsAddrRE.FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no metrics address logged before the MCP one:\n%s", log.String())
	}
	return addr, m[1], stop
}

// scrapeMetrics reads url's exposition into series → value, checking
// that every line is a comment or a sample.
func scrapeMetrics(t *testing.T, url, token string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %q %s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			t.Fatalf("bad line %q", l)
		}
		v, err := strconv.ParseFloat(l[i+1:], 64)
		if err != nil {
			t.Fatalf("bad value in %q", l)
		}
		if _, dup := out[l[:i]]; dup {
			t.Fatalf("series twice: %q", l)
		}
		out[l[:i]] = v
	}
	return out
}

// operation names a series of mcp_server_operation_duration_seconds.
func operation(suffix, method, tool, errType string) string {
	return fmt.Sprintf(`mcp_server_operation_duration_seconds_%s{mcp_method_name=%q,gen_ai_tool_name=%q,error_type=%q}`, suffix, method, tool, errType)
}

// metricsCalls makes the calls both metrics tests count: two chats, one
// that fails in the CLI, a sessions call and one refused by its rate
// limit, and an analyze call with invalid arguments.
func metricsCalls(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	callOK(t, cs, "chat", map[string]any{"prompt": "hello"})
	callOK(t, cs, "chat", map[string]any{"prompt": "hello again"})
	if res, err := callTool(cs, "chat", map[string]any{"prompt": "fail [[exit:42]]"}); err != nil || !res.IsError {
		t.Fatalf("failing chat: %v %+v", err, res)
	}
	callOK(t, cs, "sessions", map[string]any{})
	if res, err := callTool(cs, "sessions", map[string]any{}); err != nil || !res.IsError || !strings.Contains(resultText(res), "rate limit") {
		t.Fatalf("rate-limited sessions: %v %+v", err, res)
	}
	// The expert tools answer invalid arguments with a JSON-RPC error.
	if _, err := callTool(cs, "analyze", map[string]any{"question": "why?"}); err == nil {
		t.Fatal("an analyze call without files succeeded")
	}
}

// TestMetricsBinary: the server with --metrics on a port of its own counts
// each MCP request by method, tool and error type, the backend's calls by
// outcome and their tokens, the rate limiter's refusals, the store's
// operations, and an HTTP session once it ends; its /mcp listener does
// not serve /metrics.
func TestMetricsBinary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr, maddr, stop := startWithMetrics(t, e, "--rate-limits", "sessions=1/h")
	url := "http://" + maddr + "/metrics"
	before := scrapeMetrics(t, url, "")
	if before["gemini_mcp_backend_active_calls"] != 0 || before[operation("count", "tools/call", "chat", "")] != 0 {
		t.Fatalf("counts before any call: %v", before)
	}

	cs := httpClient(t, addr, "")
	metricsCalls(t, cs)
	got := scrapeMetrics(t, url, "")
	want := map[string]float64{
		operation("count", "initialize", "", ""):                                                                       1,
		operation("count", "tools/call", "chat", ""):                                                                   2,
		operation("count", "tools/call", "chat", "tool_error"):                                                         1,
		operation("count", "tools/call", "analyze", "-32602"):                                                          1,
		operation("count", "tools/call", "sessions", ""):                                                               1,
		operation("count", "tools/call", "sessions", "tool_error"):                                                     1,
		`gemini_mcp_rate_limited_total{gen_ai_tool_name="sessions"}`:                                                   1,
		`gemini_mcp_backend_call_duration_seconds_count{backend="oneshot",outcome="ok"}`:                               2,
		`gemini_mcp_backend_call_duration_seconds_count{backend="oneshot",outcome="error"}`:                            1,
		`gen_ai_client_token_usage_count{gen_ai_token_type="input",gen_ai_request_model="default",backend="oneshot"}`:  2,
		`gen_ai_client_token_usage_sum{gen_ai_token_type="input",gen_ai_request_model="default",backend="oneshot"}`:    2,
		`gen_ai_client_token_usage_count{gen_ai_token_type="output",gen_ai_request_model="default",backend="oneshot"}`: 2,
		`gemini_mcp_backend_active_calls`:                                                                              0,
		`gemini_mcp_backend_queued_calls`:                                                                              0,
		`gemini_mcp_warm_processes`:                                                                                    0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if got[`gemini_mcp_store_operation_duration_seconds_count{op="Touch"}`] < 2 {
		t.Errorf("store Touch operations: %v, want at least the two chats'", got[`gemini_mcp_store_operation_duration_seconds_count{op="Touch"}`])
	}
	if got[operation("sum", "tools/call", "chat", "")] <= 0 {
		t.Error("the chats took no time")
	}
	// Every series of the histogram has its +Inf bucket equal to its count.
	for k, v := range got {
		if rest, ok := strings.CutPrefix(k, "mcp_server_operation_duration_seconds_count{"); ok {
			if inf := got["mcp_server_operation_duration_seconds_bucket{"+strings.TrimSuffix(rest, "}")+`,le="+Inf"}`]; inf != v {
				t.Errorf("%s: +Inf bucket %v", k, inf)
			}
		}
	}
	for k := range got {
		if strings.Contains(k, "hello") || strings.Contains(k, "[[exit") {
			t.Errorf("a prompt leaked into a label: %s", k)
		}
	}

	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics on the MCP listener with --metrics ADDR: %s", resp.Status)
	}

	// Ending the session (DELETE) records its duration; the session's end
	// is seen by the server after the DELETE has been answered.
	cs.Close()
	deadline := time.Now().Add(30 * time.Second)
	for scrapeMetrics(t, url, "")["mcp_server_session_duration_seconds_count"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the ended session was not recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// TestMetricsOnHTTPListener: --metrics on serves /metrics on the --http
// listener behind its bearer tokens.
func TestMetricsOnHTTPListener(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne)
	addr, _ := startHTTP(t, e, "--metrics", "on")
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/metrics without a token: %s", resp.Status)
	}
	cs := httpClient(t, addr, tokenOne)
	callOK(t, cs, "chat", map[string]any{"prompt": "hello"})
	got := scrapeMetrics(t, "http://"+addr+"/metrics", tokenOne)
	if got[operation("count", "tools/call", "chat", "")] != 1 {
		t.Errorf("chat calls: %v", got[operation("count", "tools/call", "chat", "")])
	}
}

// TestMetricsFlagChecks: --metrics refuses what it cannot serve safely,
// before anything starts.
func TestMetricsFlagChecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics", "0.0.0.0:9464"}, "not a loopback address"},
		{[]string{"--metrics", "on"}, "set --http"},
		{[]string{"--metrics", "9464"}, "host:port"},
	} {
		cmd := e.command(c.args...)
		out, _ := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d, output %s", c.args, code, out)
		}
	}
	// --metrics-allow-remote lets a non-loopback address through the check.
	cmd := e.command("--metrics", "0.0.0.0:0", "--metrics-allow-remote", "--http", "127.0.0.1:0")
	_, stop, log := startHTTPCmd(t, cmd)
	if !metricsAddrRE.MatchString(log.String()) {
		t.Errorf("no metrics listener:\n%s", log.String())
	}
	stop()
}

// waitMetrics scrapes url until every series of want has its value, or
// fails after 30 s.
func waitMetrics(t *testing.T, url string, want map[string]float64) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := scrapeMetrics(t, url, "")
		missing := ""
		for k, v := range want {
			if got[k] != v {
				missing += fmt.Sprintf("\n%s = %v, want %v", k, got[k], v)
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s:%s", missing)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMetricsWarmPool: the warm pool's gauges show the process and spare
// session prepared when a client connects (lists the tools); a chat through it is a warm
// backend call, and --warm-max-prompts 1 recycles the process after it.
func TestMetricsWarmPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_BACKEND=warm")
	addr, maddr, _ := startWithMetrics(t, e, "--warm-max-prompts", "1")
	url := "http://" + maddr + "/metrics"
	cs := httpClient(t, addr, "")
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	waitMetrics(t, url, map[string]float64{
		"gemini_mcp_warm_processes":                          1,
		"gemini_mcp_warm_spare_sessions":                     1,
		`gemini_mcp_warm_process_starts_total{outcome="ok"}`: 1,
	})
	callOK(t, cs, "chat", map[string]any{"prompt": "hello", "model": "gemini-x"})
	waitMetrics(t, url, map[string]float64{
		`gemini_mcp_backend_call_duration_seconds_count{backend="warm",outcome="ok"}`: 1,
		`gemini_mcp_warm_process_recycles_total{reason="prompts"}`:                    1,
	})
}

// TestMetricsAPIBackend: the API backend's calls count their input, output
// and reasoning tokens as the Gemini API reports them (the fake API's
// usageMetadata), by requested model, and a failing API call is an error.
func TestMetricsAPIBackend(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	addr, maddr, _ := startWithMetrics(t, e, "--backend", "api")
	cs := httpClient(t, addr, "")
	callOK(t, cs, "chat", map[string]any{"prompt": "think about it", "thinking_mode": "high"})
	callOK(t, cs, "chat", map[string]any{"prompt": "hello", "model": "gemini-2.5-flash"})
	if res, err := callTool(cs, "chat", map[string]any{"prompt": "fail [[status:400]]"}); err != nil || !res.IsError {
		t.Fatalf("failing chat: %v %+v", err, res)
	}
	got := scrapeMetrics(t, "http://"+maddr+"/metrics", "")
	for k, v := range map[string]float64{
		`gen_ai_client_token_usage_count{gen_ai_token_type="input",gen_ai_request_model="default",backend="api"}`:           1,
		`gen_ai_client_token_usage_count{gen_ai_token_type="reasoning",gen_ai_request_model="default",backend="api"}`:       1,
		`gen_ai_client_token_usage_count{gen_ai_token_type="output",gen_ai_request_model="gemini-2.5-flash",backend="api"}`: 1,
		`gemini_mcp_backend_call_duration_seconds_count{backend="api",outcome="ok"}`:                                        2,
		`gemini_mcp_backend_call_duration_seconds_count{backend="api",outcome="error"}`:                                     1,
		operation("count", "tools/call", "chat", "tool_error"):                                                              1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if got[`gen_ai_client_token_usage_sum{gen_ai_token_type="input",gen_ai_request_model="default",backend="api"}`] < 1 {
		t.Error("no input tokens summed")
	}
	if _, ok := got[`gen_ai_client_token_usage_count{gen_ai_token_type="reasoning",gen_ai_request_model="gemini-2.5-flash",backend="api"}`]; ok {
		t.Error("reasoning tokens recorded for a call that asked for no thinking")
	}
}

// TestMetricsFallbackAndJobs: a call answered by --fallback-model after
// its model's daily quota ran out counts under both models' names; a
// background job's store calls count with the store's (create, update,
// read, wait), and none failed.
func TestMetricsFallbackAndJobs(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_FALLBACK_MODEL=flash")
	fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{Daily: true, RetryDelay: "0.01s"})
	addr, maddr, _ := startWithMetrics(t, e, "--backend", "api")
	url := "http://" + maddr + "/metrics"
	cs := httpClient(t, addr, "")
	before := scrapeMetrics(t, url, "")
	for k := range before {
		if strings.HasPrefix(k, "gemini_mcp_model_fallbacks_total") || strings.Contains(k, `op="CreateJob"`) {
			t.Fatalf("%s before any call", k)
		}
	}
	if res := callOK(t, cs, "chat", map[string]any{"prompt": "hello", "model": "gemini-2.5-pro"}); res.Meta["fallbackFrom"] != "gemini-2.5-pro" {
		t.Fatalf("no fallback: %v", res.Meta)
	}
	callOK(t, cs, "chat", map[string]any{"prompt": "no fallback here", "model": "gemini-2.5-flash"})
	id := startJob(t, cs, "chat", map[string]any{"prompt": "in the background"})
	if res, err := jobEnd(t, cs, id, nil); err != nil || res.IsError {
		t.Fatalf("job: %v %+v", err, res)
	}
	got := scrapeMetrics(t, url, "")
	n := 0
	for k, v := range got {
		if strings.HasPrefix(k, "gemini_mcp_model_fallbacks_total") {
			n++
			if k != `gemini_mcp_model_fallbacks_total{from="gemini-2.5-pro",to="gemini-2.5-flash"}` || v != 1 {
				t.Errorf("%s = %v, want the one fallback from gemini-2.5-pro to gemini-2.5-flash", k, v)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d fallback series, want 1", n)
	}
	for _, op := range []string{"CreateJob", "UpdateJob", "GetJob", "WaitJob"} {
		if got[`gemini_mcp_store_operation_duration_seconds_count{op="`+op+`"}`] < 1 {
			t.Errorf("job store operation %s not counted", op)
		}
		if v := got[`gemini_mcp_store_errors_total{op="`+op+`"}`]; v != 0 {
			t.Errorf("job store operation %s failed %v times", op, v)
		}
	}
}

// TestMetricsStdio: a stdio server serves its metrics on --metrics ADDR,
// counting its one session's requests.
func TestMetricsStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := e.command("--metrics", "127.0.0.1:0")
	stderr := &geminitest.LockedBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-metrics", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	callOK(t, cs, "chat", map[string]any{"prompt": "hello"})
	// The listener's line is logged before the server reads stdin.
	m := metricsAddrRE.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no metrics address:\n%s", stderr.String())
	}
	got := scrapeMetrics(t, "http://"+m[1]+"/metrics", "")
	// The client's handshake: initialize, or server/discover for the
	// stateless protocol.
	if n := got[operation("count", "initialize", "", "")] + got[operation("count", "server/discover", "", "")]; n != 1 {
		t.Errorf("handshakes counted: %v", n)
	}
	for k, v := range map[string]float64{
		operation("count", "tools/call", "chat", ""):                                     1,
		`gemini_mcp_backend_call_duration_seconds_count{backend="oneshot",outcome="ok"}`: 1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
