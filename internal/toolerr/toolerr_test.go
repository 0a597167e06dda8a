package toolerr

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
)

// TestFileContextErrorsOnTheWire: a file context error is reported in the
// category it names, on its field, with the entry at fault; a system
// failure is the server's, on no field.
func TestFileContextErrorsOnTheWire(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err      error
		code     int64
		wantData string
	}{
		{&filectx.Error{Category: filectx.CategorySecurity, Field: "files", Entry: "../x", Message: "outside"},
			-32001, `{"category":"security","entry":"../x","field":"files"}`},
		{fmt.Errorf("reading: %w", &filectx.Error{Category: filectx.CategoryValidation, Field: "path", Message: "not a repository"}),
			-32602, `{"category":"validation","validation_errors":[{"field":"path","error":"reading: not a repository"}]}`},
		{&filectx.Error{Category: filectx.CategorySystem, Field: "files", Entry: "a.go", Message: "unreadable"},
			-32000, `{"category":"system","entry":"a.go"}`},
		{&filectx.Error{Category: filectx.CategoryTool, Message: "git timed out"},
			-32603, `{"category":"tool"}`},
	} {
		we := WireError(c.err)
		var got, want any
		if err := json.Unmarshal(we.Data, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(c.wantData), &want); err != nil {
			t.Fatal(err)
		}
		if we.Code != c.code || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: code %d data %s; want %d %s", c.err, we.Code, we.Data, c.code, c.wantData)
		}
	}
}
