package metrics

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's metrics. Names follow the OpenTelemetry semantic
// conventions where they exist (MCP: mcp.server.operation.duration,
// mcp.server.session.duration; GenAI: gen_ai.client.token.usage) in their
// Prometheus form; the rest are the server's own, prefixed
// gemini_mcp_. Every label's values come from a bounded set.

// Set is the server's metrics. The hooks the server calls (Observe*,
// Backend*, Warm*, Store*, RateLimited) go to the Set Enable installed; with
// none (metrics off) each is a nil check.
type Set struct {
	reg *Registry

	operation, session, tokens, backendCall, storeOp   *HistogramVec
	warmRecycles, warmStarts, storeErrors, rateLimited *CounterVec
	fallbacks                                          *CounterVec
	activeCalls, queued                                *GaugeVec
	warmProcs, warmSpares                              *GaugeFunc

	tools  map[string]bool
	models models
	// noSessions: the transport has no sessions to time (stateless HTTP).
	noSessions bool
}

// NoSessions stops the timing of sessions, for a transport without them
// (stateless HTTP, where initialize's session ends with its request).
// Call it before Middleware serves.
func (s *Set) NoSessions() { s.noSessions = true }

// Buckets, in seconds: the semantic conventions' advice for MCP operations
// (to 300 s, the longest a Gemini call usually takes), longer for sessions.
var (
	operationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	sessionBuckets   = []float64{1, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 43200, 86400}
	tokenBuckets     = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304}
	storeBuckets     = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// MaxModels is how many distinct model names the token metrics keep as
// labels; later ones count as "other".
const MaxModels = 16

// New returns the server's metrics; tools are the tool names that may
// appear as gen_ai_tool_name (the registry's), any other counting as
// "other".
func New(tools []string) *Set {
	r := NewRegistry()
	s := &Set{reg: r, tools: map[string]bool{}}
	for _, t := range tools {
		s.tools[t] = true
	}
	s.operation = r.NewHistogram("mcp_server_operation_duration_seconds",
		"Time the server took to answer an MCP request, by method, tool (tools/call) and error type.",
		operationBuckets, "mcp_method_name", "gen_ai_tool_name", "error_type")
	s.session = r.NewHistogram("mcp_server_session_duration_seconds",
		"Lifetime of MCP sessions that have ended, from initialize to their end.", sessionBuckets)
	s.tokens = r.NewHistogram("gen_ai_client_token_usage",
		"Tokens per Gemini call, by token type (input, output, cached, reasoning, tool_use), requested model and backend.",
		tokenBuckets, "gen_ai_token_type", "gen_ai_request_model", "backend")
	s.backendCall = r.NewHistogram("gemini_mcp_backend_call_duration_seconds",
		"Time of a call to Gemini through the backend, from holding a slot to the answer, by backend and outcome.",
		operationBuckets, "backend", "outcome")
	s.activeCalls = r.NewGauge("gemini_mcp_backend_active_calls", "Calls to Gemini running now (holding a --max-concurrent slot).")
	s.queued = r.NewGauge("gemini_mcp_backend_queued_calls", "Calls waiting for a free --max-concurrent slot.")
	s.warmProcs = r.NewGaugeFunc("gemini_mcp_warm_processes", "Warm gemini --acp processes alive.")
	s.warmSpares = r.NewGaugeFunc("gemini_mcp_warm_spare_sessions", "Spare sessions ready in warm processes.")
	s.warmStarts = r.NewCounter("gemini_mcp_warm_process_starts_total", "Warm gemini --acp processes started, by outcome (ok, failed).", "outcome")
	s.warmRecycles = r.NewCounter("gemini_mcp_warm_process_recycles_total",
		"Warm processes taken out of service, by reason (prompts, sessions, memory, idle, exited).", "reason")
	s.storeOp = r.NewHistogram("gemini_mcp_store_operation_duration_seconds", "Time of session store operations (background jobs' too), by operation.",
		storeBuckets, "op")
	s.storeErrors = r.NewCounter("gemini_mcp_store_errors_total", "Session store operations (background jobs' too) that failed, by operation.", "op")
	s.fallbacks = r.NewCounter("gemini_mcp_model_fallbacks_total",
		"Turns sent to --fallback-model because the asked model's quota was exhausted, by asked model (from) and fallback model (to).", "from", "to")
	s.rateLimited = r.NewCounter("gemini_mcp_rate_limited_total", "Tool calls refused by --rate-limits, by tool.", "gen_ai_tool_name")
	for _, b := range []string{"warm", "oneshot", "api"} {
		for _, o := range Outcomes {
			s.backendCall.f.get([]string{b, o})
		}
	}
	s.activeCalls.Set(0)
	s.queued.Set(0)
	return s
}

// Handler serves the metrics in the text format.
func (s *Set) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method == http.MethodHead {
			return
		}
		s.reg.WriteTo(w)
	})
}

// Registry is where s's families live (for tests and writing).
func (s *Set) Registry() *Registry { return s.reg }

var current atomic.Pointer[Set]

// Enable makes s receive the hooks (nil: metrics off).
func Enable(s *Set) { current.Store(s) }

// Current is the enabled Set, or nil.
func Current() *Set { return current.Load() }

// Error types of mcp_server_operation_duration_seconds: "" for success,
// tool_error for a tool result with isError, the JSON-RPC error code for a
// JSON-RPC error of a known code, else "other" (or "cancelled").
func knownCode(code int64) (string, bool) {
	switch code {
	case -32700, -32600, -32601, -32602, -32603, -32002, -32042:
		return strconv.FormatInt(code, 10), true
	}
	return "", false
}

// knownMethod says whether method is an MCP method kept as a label; any
// other is "other".
func knownMethod(method string) bool {
	switch method {
	case "initialize", "ping", "server/discover", "tools/list", "tools/call",
		"resources/list", "resources/read", "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
		"prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed":
		return true
	}
	return false
}

// Middleware times every MCP request the server receives. It should be
// the outermost middleware, so that refusals by the others count too. The
// session of an initialize request is timed until it ends (one goroutine
// per session waits for it, only while metrics are on).
func (s *Set) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		res, err := next(ctx, method, req)
		tool := ""
		if method == "tools/call" {
			tool = "other"
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && s.tools[p.Name] {
				tool = p.Name
			}
		}
		s.ObserveOperation(method, tool, errorType(ctx, res, err), time.Since(start))
		if method == "initialize" && err == nil && !s.noSessions {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				go func() {
					ss.Wait()
					s.session.Observe(time.Since(start).Seconds())
				}()
			}
		}
		return res, err
	}
}

// ObserveOperation records one MCP request.
func (s *Set) ObserveOperation(method, tool, errType string, d time.Duration) {
	if !knownMethod(method) {
		method = "other"
	}
	s.operation.Observe(d.Seconds(), method, tool, errType)
}

func errorType(ctx context.Context, res mcp.Result, err error) string {
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			if c, ok := knownCode(we.Code); ok {
				return c
			}
		}
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return "cancelled"
		}
		return "other"
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		return "tool_error"
	}
	return ""
}

// Outcomes of a backend call.
var Outcomes = []string{"ok", "error", "cancelled", "timeout"}

// BackendQueued counts a call waiting for a --max-concurrent slot:
// running moves it to the running calls when it has one, done ends it
// (either way; calling done twice is harmless only through the caller).
func BackendQueued() (running func(), done func()) {
	s := Current()
	if s == nil {
		return func() {}, func() {}
	}
	s.queued.Add(1)
	var once sync.Once
	leaveQueue := func() { once.Do(func() { s.queued.Add(-1) }) }
	var ran atomic.Bool
	return func() {
			leaveQueue()
			ran.Store(true)
			s.activeCalls.Add(1)
		}, func() {
			leaveQueue()
			if ran.Load() {
				s.activeCalls.Add(-1)
			}
		}
}

// BackendCall records a call to Gemini through backend (warm, oneshot,
// api) that took d and ended with outcome (one of Outcomes).
func BackendCall(backend, outcome string, d time.Duration) {
	if s := Current(); s != nil {
		s.backendCall.Observe(d.Seconds(), backend, outcome)
	}
}

// Tokens records the tokens of one answered call; a count of 0 (not
// reported) is not recorded. model "" stands for the backend's default.
// toolUse are the input tokens of what the API's own tools (search, URL
// context) fed the model, billed beside input.
func Tokens(backend, model string, input, output, cached, reasoning, toolUse int) {
	s := Current()
	if s == nil {
		return
	}
	m := s.models.label(model)
	for _, t := range [...]struct {
		kind string
		n    int
	}{{"input", input}, {"output", output}, {"cached", cached}, {"reasoning", reasoning}, {"tool_use", toolUse}} {
		if t.n > 0 {
			s.tokens.Observe(float64(t.n), t.kind, m, backend)
		}
	}
}

// models bounds the model label: a name that looks like a model's, among
// the first MaxModels seen, is kept; others are "other".
type models struct {
	mu   sync.RWMutex
	seen []string
}

// modelName says whether name looks like a model's name: up to 64 lower
// case letters, digits, dots, dashes and underscores, starting with a
// letter or digit.
func modelName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '-' || c == '_')) {
			return false
		}
	}
	return true
}

func (m *models) label(name string) string {
	if name == "" {
		return "default"
	}
	m.mu.RLock()
	ok := slices.Contains(m.seen, name)
	m.mu.RUnlock()
	if ok {
		return name
	}
	if !modelName(name) {
		return "other"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.seen, name) {
		return name
	}
	if len(m.seen) >= MaxModels {
		return "other"
	}
	m.seen = append(m.seen, name)
	return name
}

// WarmPool sets the function the warm pool gauges read when scraped: the
// processes alive and the spare sessions ready.
func WarmPool(counts func() (procs, spares int)) {
	if s := Current(); s != nil {
		s.warmProcs.Set(func() float64 { n, _ := counts(); return float64(n) })
		s.warmSpares.Set(func() float64 { _, n := counts(); return float64(n) })
	}
}

// WarmStart counts a warm process start.
func WarmStart(err error) {
	if s := Current(); s != nil {
		o := "ok"
		if err != nil {
			o = "failed"
		}
		s.warmStarts.Inc(o)
	}
}

// WarmRecycle counts a warm process taken out of service for reason
// (prompts, sessions, memory, idle, exited).
func WarmRecycle(reason string) {
	if s := Current(); s != nil {
		s.warmRecycles.Inc(reason)
	}
}

// StoreOp records a session store operation (op is a method name of
// session.Store, or of jobs.Store for the jobs kept in it) that took d and
// failed with err (nil: succeeded).
func StoreOp(op string, d time.Duration, err error) {
	if s := Current(); s != nil {
		s.storeOp.Observe(d.Seconds(), op)
		if err != nil {
			s.storeErrors.Inc(op)
		}
	}
}

// RateLimited counts a tool call refused by a rate limit.
func RateLimited(tool string) {
	if s := Current(); s != nil {
		if !s.tools[tool] {
			tool = "other"
		}
		s.rateLimited.Inc(tool)
	}
}

// ModelFallback counts a turn sent to the fallback model to after the
// quota of the asked model from was exhausted. The names are the model
// list's (the caller passes "other" for one it does not hold), kept as
// labels as the token metrics keep theirs.
func ModelFallback(from, to string) {
	if s := Current(); s != nil {
		s.fallbacks.Inc(s.models.label(from), s.models.label(to))
	}
}
