package filesearch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func TestAPIErrorsSayWhatFailed(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.fake.RequireKey("another-key")
	_, err := f.api.CreateStore(ctx, "p")
	if err == nil || err.Error() != "creating a File Search store: the Gemini API answered HTTP 400 INVALID_ARGUMENT: "+fakeapi.BadKeyMessage {
		t.Fatalf("CreateStore with a bad key: %v", err)
	}
	root := t.TempDir()
	tree(t, root, 2)
	if _, err := f.indexer(nil, Options{}).Index(ctx, root, "alice"); err == nil || !strings.Contains(err.Error(), fakeapi.BadKeyMessage) {
		t.Fatalf("Index with a bad key: %v", err)
	}
	if r, _ := f.man.Get(ctx, Key(root, "alice")); r.Store != "" {
		t.Fatalf("a failed index left a manifest: %+v", r)
	}
}

func TestAPIUploadToAGoneStore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	name, err := f.api.CreateStore(ctx, "p")
	must(t, err)
	f.fake.DropStore(name)
	if _, err := f.api.Upload(ctx, name, Doc{Path: "a.go"}, []byte("x")); !errors.Is(err, ErrStoreGone) || !strings.Contains(err.Error(), "uploading a.go") {
		t.Fatalf("Upload to a gone store: %v, want ErrStoreGone", err)
	}
	if ok, _, err := f.api.StoreExists(ctx, name); ok || err != nil {
		t.Fatalf("StoreExists of a gone store: %v, %v", ok, err)
	}
	if err := f.api.DeleteStore(ctx, name); err != nil {
		t.Fatalf("DeleteStore of a gone store: %v, want none", err)
	}
}

func TestAPIPollingIsBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.fake.SetPendingPolls(1 << 30)
	f.api.PollLimit = 20 * time.Millisecond
	name, err := f.api.CreateStore(ctx, "p")
	must(t, err)
	_, err = f.api.Upload(ctx, name, Doc{Path: "a.go"}, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "uploading a.go to the File Search store: the Gemini API had not indexed it after 20ms") {
		t.Fatalf("Upload never indexed: %v", err)
	}
	polls := func(rs []fakeapi.Request) int {
		n := 0
		for _, r := range rs {
			if r.Method == fakeapi.MethodOperationGet {
				n++
			}
		}
		return n
	}
	before := polls(f.fake.Requests())
	cctx, cancel := context.WithCancel(ctx)
	f.api.PollLimit = time.Hour
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Cancelled once the upload's first poll has been answered.
		f.fake.WaitFor(cctx, func(rs []fakeapi.Request) bool { return polls(rs) > before })
		cancel()
	}()
	defer func() { cancel(); <-done }()
	if _, err := f.api.Upload(cctx, name, Doc{Path: "b.go"}, []byte("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Upload cancelled while polling: %v", err)
	}
}
