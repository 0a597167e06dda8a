package mcphost

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolName's expectations were produced by running generateValidName
// of the Gemini CLI 0.61.0 bundle under Node on server + "_" + tool.
func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"gemini", "chat-reply", "mcp_gemini_chat-reply"},
		{"my server", "get/thing", "mcp_my_server_get_thing"},
		{"db", "tool.with.dots", "mcp_db_tool.with.dots"},
		{"srv", "a" + strings.Repeat("b", 63) + "z", "mcp_srv_abbbbbbbbbbbbbbbbbbbbb...bbbbbbbbbbbbbbbbbbbbbbbbbbbbbz"},
		{"a", "b_c", "mcp_a_b_c"},
		{"a_b", "c", "mcp_a_b_c"},
		{"mcp_x", "y", "mcp_x_y"},
		{"héllo", "wörld", "mcp_h_llo_w_rld"},
		{"e", "x😀y", "mcp_e_x__y"},
		{"srv", "ns:op", "mcp_srv_ns:op"},
		{"9lives", "t", "mcp_9lives_t"},
		{"", "t", "mcp__t"},
		{"long-server-name-for-tests", "create_pull_request_with_a_very_long_name_indeed", "mcp_long-server-name-for-tests...t_with_a_very_long_name_indeed"},
	} {
		got := ToolName(tc.server, tc.tool)
		if got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if len(got) > MaxNameLength {
			t.Errorf("ToolName(%q, %q) has %d characters", tc.server, tc.tool, len(got))
		}
	}
}

func TestEnabled(t *testing.T) {
	s := ServerConfig{IncludeTools: []string{"query(sql: string)", "list", "drop"}, ExcludeTools: []string{"drop", "list("}}
	for tool, want := range map[string]bool{
		"query": true,  // the name( form
		"list":  true,  // exact; "list(" in excludeTools is not an exact match
		"drop":  false, // exclude wins
		"que":   false, // a prefix without "(" is not a match
		"other": false, // not included
		"":      false,
	} {
		if got := Enabled(s, tool); got != want {
			t.Errorf("Enabled(%q) = %v, want %v", tool, got, want)
		}
	}
	if !Enabled(ServerConfig{ExcludeTools: []string{"x"}}, "y") {
		t.Error("without includeTools every tool but the excluded ones is offered")
	}
	if Enabled(ServerConfig{IncludeTools: []string{}}, "y") {
		t.Error("an empty includeTools offers nothing, as in the CLI")
	}
}

func TestGeminiSchema(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"missing", `null`, `{"type":"object","properties":{}}`},
		{"nullable as the CLI does", `{"type":"object","properties":{"a":{"type":["null","string"]},"b":{"type":["integer","null"]},"c":{"type":["string","integer","null"]},"d":{"type":["string","integer"]}}}`,
			`{"type":"object","properties":{"a":{"type":"string","nullable":true},"b":{"type":"integer","nullable":true},"c":{"type":["string","integer","null"]},"d":{"type":["string","integer"]}}}`},
		{"passes the rest through", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string","anyOf":[{"minLength":1}]}}}`,
			`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,"required":["q"],"properties":{"q":{"type":"string","anyOf":[{"minLength":1}]}}}`},
		{"$defs inlined", `{"type":"object","$defs":{"Point":{"type":"object","properties":{"x":{"type":["null","number"]}}}},"properties":{"p":{"$ref":"#/$defs/Point","description":"where"},"q":{"type":"array","items":{"$ref":"#/$defs/Point"}}}}`,
			`{"type":"object","properties":{"p":{"type":"object","description":"where","properties":{"x":{"type":"number","nullable":true}}},"q":{"type":"array","items":{"type":"object","properties":{"x":{"type":"number","nullable":true}}}}}}`},
		{"definitions and escaped pointers", `{"definitions":{"a/b":{"type":"string"}},"type":"object","properties":{"s":{"$ref":"#/definitions/a~1b"}}}`,
			`{"type":"object","properties":{"s":{"type":"string"}}}`},
		{"a recursive type is cut", `{"$defs":{"Node":{"type":"object","description":"a tree node","properties":{"children":{"type":"array","items":{"$ref":"#/$defs/Node"}}}}},"$ref":"#/$defs/Node"}`,
			`{"type":"object","description":"a tree node","properties":{"children":{"type":"array","items":{"type":"object","description":"a tree node"}}}}`},
		{"a reference to the root", `{"type":"object","properties":{"next":{"$ref":"#"}}}`,
			`{"type":"object","properties":{"next":{"type":"object","properties":{"next":{"type":"object"}}}}}`},
		{"a remote reference", `{"type":"object","properties":{"r":{"$ref":"https://example.test/s.json"}}}`,
			`{"type":"object","properties":{"r":{"description":"(schema reference https://example.test/s.json not resolved)"}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var in any
			if err := json.Unmarshal([]byte(tc.in), &in); err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			got, err := GeminiSchema(in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalize(got), want) {
				g, _ := json.Marshal(got)
				t.Errorf("got  %s\nwant %s", g, tc.want)
			}
			if strings.Contains(string(mustJSON(t, got)), "$ref") {
				t.Error("a $ref is left")
			}
		})
	}
	// The input is not changed: the host keeps the server's own schema.
	var in any
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{"a":{"type":["null","string"]}}}`), &in)
	before := string(mustJSON(t, in))
	if _, err := GeminiSchema(in); err != nil {
		t.Fatal(err)
	}
	if after := string(mustJSON(t, in)); after != before {
		t.Errorf("input changed: %s", after)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDeclareConflicts(t *testing.T) {
	tool := func(name string) *mcp.Tool {
		return &mcp.Tool{Name: name, Description: "d " + name, InputSchema: map[string]any{"type": "object"}}
	}
	// Two long names with the same first and last 30 characters.
	long1 := strings.Repeat("x", 30) + "one" + strings.Repeat("y", 30)
	long2 := strings.Repeat("x", 30) + "two" + strings.Repeat("y", 30)
	short := "mcp_one_" + strings.Repeat("x", 22) + "..." + strings.Repeat("y", 30)
	tools, skipped := declare([]listing{
		{ServerConfig{Name: "one", Trust: true}, prepareTools([]*mcp.Tool{tool("echo"), tool(long1), tool(long2)})},
		{ServerConfig{Name: "two", ExcludeTools: []string{"secret"}}, prepareTools([]*mcp.Tool{tool("echo"), tool("secret")})},
		{ServerConfig{Name: "a"}, prepareTools([]*mcp.Tool{tool("b_c")})},
		{ServerConfig{Name: "a_b", IncludeTools: []string{"c(x)"}}, prepareTools([]*mcp.Tool{tool("c"), tool("d")})},
	})
	var names []string
	for _, h := range tools {
		names = append(names, h.Server+"/"+h.Tool+"="+h.Name)
	}
	want := []string{
		"one/echo=mcp_one_echo",
		"one/" + long1 + "=" + short,
		"two/echo=mcp_two_echo",
		"a/b_c=mcp_a_b_c",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("declared\n%q\nwant\n%q", names, want)
	}
	wantSkipped := []Skipped{
		{"one", long2, "its name " + short + ` is taken by tool "` + long1 + `" of server "one"`},
		{"two", "secret", "in excludeTools"},
		{"a_b", "c", `its name mcp_a_b_c is taken by tool "b_c" of server "a"`},
		{"a_b", "d", "not in includeTools"},
	}
	if !reflect.DeepEqual(skipped, wantSkipped) {
		t.Errorf("skipped\n%q\nwant\n%q", skipped, wantSkipped)
	}
	if !tools[0].Trusted || tools[2].Trusted || tools[0].Description != "d echo" || tools[0].Schema["type"] != "object" {
		t.Errorf("%+v", tools)
	}
}
