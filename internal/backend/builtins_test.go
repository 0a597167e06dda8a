package backend

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestBuiltinsRefuse(t *testing.T) {
	if err := (Builtins{}).Refuse("warm"); err != nil {
		t.Errorf("a turn without built-in tools refused: %v", err)
	}
	for b, says := range map[*Builtins]string{
		{GoogleSearch: true}:                                   "google_search: the warm backend cannot do this",
		{URLs: []string{"https://example.com/"}}:               "urls: the warm backend cannot do this",
		{ResponseSchema: json.RawMessage(`{"type":"object"}`)}: "response_schema: the warm backend cannot do this",
		{Image: &ImageRequest{}, GoogleSearch: true}:           "image: the warm backend cannot do this",
	} {
		err := b.Refuse("warm")
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInput || !errors.Is(err, ErrNoBuiltins) || !strings.Contains(e.Reason, says) ||
			!strings.Contains(e.Reason, "--backend api") {
			t.Errorf("Refuse(%+v) = %v, want a KindInput error saying %q", *b, err, says)
		}
	}
}
