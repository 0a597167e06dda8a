//go:build unix

package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// EnvRequired, set to 1, turns a missing haproxy or nginx into a failure
// (scripts/test.sh sets it, as it installs both).
const envRequired = "GEMINI_MCP_LB_REQUIRED"

// guard bounds every wait of these tests. It is a failure guard only: the
// events waited for take milliseconds to seconds (a dead replica's lease
// frees itself after 10 s).
const guard = 2 * time.Minute

var serverBin string

func TestMain(m *testing.M) {
	// The manifests these tests read stay in the repository's deploy/,
	// beside what they configure; the tests run there, so that they name
	// them as an operator does ("haproxy.cfg", "../Containerfile").
	if err := os.Chdir(filepath.Join("..", "..", "deploy")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin, cleanup, err := geminitest.BuildTestServer("deploy")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = bin
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// binary returns the path of name, or skips t (fails it when envRequired
// is 1) when it is not installed.
func binary(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name} {
		if bin, err := exec.LookPath(p); err == nil {
			return bin
		}
	}
	why := name + " is not installed (Debian: apt-get install " + name + "; scripts/test.sh installs it)"
	if os.Getenv(envRequired) == "1" {
		t.Fatalf("%s, and %s=1 requires the load balancer tests to run", why, envRequired)
	}
	t.Skipf("%s: skipping; set %s=1 to make this a failure", why, envRequired)
	return ""
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	return ctx
}

// proc is a child process whose stderr is kept, killed and reaped when the
// test ends.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    geminitest.LockedBuffer
	exited chan struct{}
}

func startProc(t *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	// A group of its own, so that its children (nginx's workers) go with
	// it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	w.Close()
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.log.Write([]byte(sc.Text() + "\n"))
		}
		io.Copy(io.Discard, r)
		r.Close()
	}()
	go func() {
		cmd.Wait()
		<-logged
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		if t.Failed() {
			t.Logf("%s's output:\n%s", name, p.log.String())
		}
	})
	return p
}

// signal sends sig to the process (not its group: a replica's children
// are its own to stop).
func (p *proc) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// waitLog waits until the process has logged s, failing when it exits
// first.
func (p *proc) waitLog(t *testing.T, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if !p.log.WaitFor(ctx, s) {
		t.Fatalf("%s never logged %q:\n%s", p.name, s, p.log.String())
	}
}

// replica is one gemini-mcp-server process on a port of the kernel's
// choosing, restarted on the same port, with a fake Gemini API of its own: the requests a fake
// receives are the turns its replica ran.
type replica struct {
	root *testing.T // the test the replica's runs last as long as
	n    int        // 1, 2, 3
	port int
	fake *fakeapi.Server
	args []string
	env  []string
	runs []*proc // every run, the current one last
}

func (r *replica) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }
func (r *replica) cur() *proc   { return r.runs[len(r.runs)-1] }

// logs is what every run of the replica has logged.
func (r *replica) logs() string {
	var b strings.Builder
	for _, p := range r.runs {
		b.WriteString(p.log.String())
	}
	return b.String()
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(serverBin, append([]string{"--http", r.addr()}, r.args...)...)
	cmd.Env = r.env
	p := startProc(r.root, fmt.Sprintf("replica %d (run %d)", r.n, len(r.runs)+1), cmd)
	r.runs = append(r.runs, p)
	p.waitLog(t, `msg="serving MCP over HTTP"`)
	if r.port == 0 {
		// The first run binds a port of the kernel's choosing and logs
		// it, and the restarts take that port again: a port found free
		// and bound later could be taken meanwhile by another process.
		m := servingPort.FindStringSubmatch(p.log.String())
		if m == nil {
			t.Fatalf("replica %d logged no port it serves on:\n%s", r.n, p.log.String())
		}
		r.port, _ = strconv.Atoi(m[1])
	}
}

// servingPort finds the port in the line a replica logs once it serves.
var servingPort = regexp.MustCompile(`msg="serving MCP over HTTP" addr=127\.0\.0\.1:(\d+) `)

// stop sends sig and waits for the replica to exit.
func (r *replica) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p := r.cur()
	p.signal(sig)
	select {
	case <-p.exited:
	case <-time.After(guard):
		t.Fatalf("replica %d did not exit after %v", r.n, sig)
	}
}

// topology is three replicas on one Redis behind a balancer.
type topology struct {
	t        *testing.T
	replicas []*replica
	lb       *proc
	lbAddr   string
	stats    string // HAProxy's statistics page, "" for nginx
	kind     string
}

// newReplicas starts the replicas, with --stateless or, given mode
// "sessions", without.
func newReplicas(t *testing.T, mode string) *topology {
	t.Helper()
	redis := redistest.Start(t)
	top := &topology{t: t}
	for n := 1; n <= 3; n++ {
		fake := fakeapi.New()
		t.Cleanup(fake.Close)
		dir := t.TempDir()
		args := []string{"--backend", "api", "--store", redis.URL(0), "--max-answer-bytes", "1000", "--progress-interval", "100ms"}
		if mode != "sessions" {
			args = append(args, "--stateless")
		}
		r := &replica{root: t, n: n, fake: fake, args: args,
			env: append(os.Environ(), "GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL="+fake.URL(),
				"GEMINI_MCP_STATE_DIR="+filepath.Join(dir, "state"), "HOME="+dir),
		}
		r.start(t)
		top.replicas = append(top.replicas, r)
	}
	return top
}

// startHAProxy runs cfg (haproxy.cfg, the file compose.yaml mounts, or a
// variant of it) in front of the replicas (see newReplicas for mode), and
// returns once it sees all three up.
func startHAProxy(t *testing.T, cfg, mode string) *topology {
	bin := binary(t, "haproxy")
	top := newReplicas(t, mode)
	top.kind = "haproxy"
	top.lbAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	top.stats = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg, err := filepath.Abs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Env = append(os.Environ(), "LB_LISTEN="+top.lbAddr, "LB_STATS="+top.stats)
	for _, r := range top.replicas {
		cmd.Env = append(cmd.Env, fmt.Sprintf("REPLICA%d=%s", r.n, r.addr()))
	}
	top.lb = startProc(t, "haproxy", cmd)
	for _, r := range top.replicas {
		top.waitUp(r)
	}
	return top
}

// startNginx runs nginx.conf with its variables filled in, unprivileged,
// in front of the replicas, and returns once it answers.
func startNginx(t *testing.T) *topology {
	bin := binary(t, "nginx")
	top := newReplicas(t, "stateless")
	top.kind = "nginx"
	port := freePort(t)
	top.lbAddr = fmt.Sprintf("127.0.0.1:%d", port)
	vars := map[string]string{"LB_LISTEN": top.lbAddr}
	for _, r := range top.replicas {
		vars[fmt.Sprintf("REPLICA%d", r.n)] = r.addr()
	}
	conf := envsubst(t, "nginx.conf", vars)
	prefix := t.TempDir()
	if err := os.MkdirAll(filepath.Join(prefix, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	top.lb = startProc(t, "nginx", exec.Command(bin, "-p", prefix, "-c", path, "-e", "stderr", "-g", "daemon off;"))
	ctx := waitCtx(t)
	if err := geminitest.Poll(ctx, "the balancer's /healthz", func() (bool, error) { return healthy("http://" + top.lbAddr + "/healthz"), nil }); err != nil {
		t.Fatalf("nginx never answered /healthz: %v", err)
	}
	return top
}

// envsubst fills ${NAME} in the file with vars, as envsubst given only
// those names does, leaving nginx's own $variables alone. A ${NAME} left
// over is an error.
func envsubst(t *testing.T, file string, vars map[string]string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "${"+k+"}", v)
	}
	// Comments may name the variables; the directives may not keep any.
	for _, line := range strings.Split(s, "\n") {
		if code, _, _ := strings.Cut(line, "#"); strings.Contains(code, "${") {
			t.Fatalf("%s: a variable is left unset in %q", file, line)
		}
	}
	return s
}

func healthy(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// haproxyStatus is the status HAProxy's statistics give server rN: UP,
// DOWN, or a transition such as "UP 1/2".
func (top *topology) haproxyStatus(n int) string {
	resp, err := http.Get("http://" + top.stats + "/stats;csv")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	recs, err := csv.NewReader(io.LimitReader(resp.Body, 1<<20)).ReadAll()
	if err != nil || len(recs) == 0 {
		return ""
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[strings.TrimPrefix(h, "# ")] = i
	}
	for _, rec := range recs[1:] {
		if len(rec) > col["status"] && rec[col["pxname"]] == "replicas" && rec[col["svname"]] == fmt.Sprintf("r%d", n) {
			return rec[col["status"]]
		}
	}
	return ""
}

// waitUp waits until replica r answers its health check, and, behind
// HAProxy, until HAProxy's checks have it up.
func (top *topology) waitUp(r *replica) {
	t := top.t
	t.Helper()
	ctx := waitCtx(t)
	if err := geminitest.Poll(ctx, "the replica's /healthz", func() (bool, error) { return healthy("http://" + r.addr() + "/healthz"), nil }); err != nil {
		t.Fatalf("replica %d never answered /healthz: %v", r.n, err)
	}
	if top.stats == "" {
		return
	}
	if err := geminitest.Poll(ctx, "HAProxy's check of the replica", func() (bool, error) { return top.haproxyStatus(r.n) == "UP", nil }); err != nil {
		t.Fatalf("HAProxy never had r%d up (status %q): %v", r.n, top.haproxyStatus(r.n), err)
	}
}

// servedBy maps a response's X-Served-By (HAProxy's server name rN, or
// nginx's upstream address, the last one tried) to the replica's number,
// 0 when it names none.
func (top *topology) servedBy(h string) int {
	if i := strings.LastIndex(h, ","); i >= 0 {
		h = h[i+1:]
	}
	h = strings.TrimSpace(h)
	for _, r := range top.replicas {
		if h == fmt.Sprintf("r%d", r.n) || h == r.addr() {
			return r.n
		}
	}
	return 0
}

// waitStream waits until a replica's fake API receives a turn whose prompt
// holds marker, and returns that replica and the request.
func (top *topology) waitStream(marker string) (*replica, fakeapi.Request) {
	t := top.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	type hit struct {
		r   *replica
		req fakeapi.Request
	}
	got := make(chan hit, len(top.replicas))
	for _, r := range top.replicas {
		go func() {
			if req, err := r.fake.WaitStream(ctx, marker); err == nil {
				got <- hit{r, req}
			}
		}()
	}
	select {
	case h := <-got:
		return h.r, h.req
	case <-ctx.Done():
		t.Fatalf("no replica received a turn with %q", marker)
		return nil, fakeapi.Request{}
	}
}

// served is one tool call as the client sent it, with the replica that
// answered.
type served struct {
	tool, label string
	replica     int
}

// recorder is an HTTP transport that notes which replica answered each
// tool call (X-Served-By).
type recorder struct {
	top  *topology
	base http.RoundTripper
	mu   sync.Mutex
	log  []served
}

func (rec *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var call struct {
		Method string
		Params struct {
			Name      string
			Arguments map[string]any
		}
	}
	if req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &call)
	}
	resp, err := rec.base.RoundTrip(req)
	if err == nil && call.Method == "tools/call" {
		label := fmt.Sprint(call.Params.Arguments["prompt"])
		if p, ok := call.Params.Arguments["page"]; ok {
			label = fmt.Sprint("page ", p)
		}
		rec.mu.Lock()
		rec.log = append(rec.log, served{call.Params.Name, label, rec.top.servedBy(resp.Header.Get("X-Served-By"))})
		rec.mu.Unlock()
	}
	return resp, err
}

func (rec *recorder) calls() []served {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]served(nil), rec.log...)
}

// client is an MCP client of the balancer, reconnecting when asked.
type client struct {
	top      *topology
	rec      *recorder
	progress func(*mcp.ProgressNotificationParams)
	cs       *mcp.ClientSession
}

func (top *topology) client(progress func(*mcp.ProgressNotificationParams)) *client {
	c := &client{top: top, rec: &recorder{top: top, base: &http.Transport{}}, progress: progress}
	if err := c.connect(); err != nil {
		top.t.Fatal(err)
	}
	top.t.Cleanup(func() {
		if c.cs != nil {
			c.cs.Close()
		}
	})
	return c
}

func (c *client) connect() error {
	if c.cs != nil {
		c.cs.Close()
		c.cs = nil
	}
	opts := &mcp.ClientOptions{}
	if c.progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.progress(req.Params)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "deploy-test", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + c.top.lbAddr + "/mcp", HTTPClient: &http.Client{Transport: c.rec}}, nil)
	if err != nil {
		return fmt.Errorf("connecting through %s: %w", c.top.kind, err)
	}
	c.cs = cs
	return nil
}

// call calls tool; a failed call is an error, whether the transport's or
// the tool's.
func (c *client) call(ctx context.Context, tool string, args map[string]any, progress bool) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progress {
		p.SetProgressToken("p-" + fmt.Sprint(args["prompt"]))
	}
	res, err := c.cs.CallTool(ctx, p)
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return res, fmt.Errorf("%s: tool error: %s", tool, text(res))
	}
	return res, nil
}

// mustCall calls tool and fails the test unless it answers.
func (c *client) mustCall(tool string, args map[string]any) *mcp.CallToolResult {
	c.top.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	res, err := c.call(ctx, tool, args, false)
	if err != nil {
		c.top.t.Fatalf("%s %v through %s: %v", tool, args, c.top.kind, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return fmt.Sprintf("%+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%+v", res.Content[0])
}

// answer is a result's answer without the server's notes.
func answer(res *mcp.CallToolResult) string {
	s, _, _ := strings.Cut(text(res), "\n\n[gemini-mcp-server:")
	return s
}

// missing returns those of texts that the API request r did not send in
// its history.
func missing(r fakeapi.Request, texts ...string) []string {
	var out []string
	for _, s := range texts {
		enc, _ := json.Marshal(s)
		if !bytes.Contains(r.Body, bytes.Trim(enc, `"`)) {
			out = append(out, s)
		}
	}
	return out
}
