package identity

import (
	"context"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	if k := Of(With(context.Background(), "token:abc")); k != "token:abc" {
		t.Errorf("with a token: %q", k)
	}
	if k := Of(context.Background()); k != "local" {
		t.Errorf("without a caller: %q", k)
	}
}
