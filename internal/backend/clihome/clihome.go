// Package clihome is where the Gemini CLI keeps its files, found as the
// CLI finds it, and the part of its settings.json this server reads. The
// doctor and the warm backend (which removes its unused sessions' files)
// both resolve the CLI's home here.
package clihome

import (
	"bytes"
	"encoding/json"
	"os/user"
	"path/filepath"
	"strings"
)

// Home is the directory the Gemini CLI run with the environment getenv
// reads keeps its files under (in .gemini): GEMINI_CLI_HOME, else HOME,
// else the user's home directory in the system's user database (where
// Node's os.homedir looks without HOME). It is "" when none is known. An
// empty variable counts as unset.
func Home(getenv func(string) string) string {
	if h := getenv("GEMINI_CLI_HOME"); h != "" {
		return h
	}
	if h := getenv("HOME"); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// Dir is the CLI's own directory under Home: settings.json,
// oauth_creds.json, .env, tmp/<project>/chats. It is "" when Home is.
func Dir(getenv func(string) string) string {
	home := Home(getenv)
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".gemini")
}

// Getenv reads a process's environment given as a list of KEY=value
// entries: the last entry of a variable wins, as in os/exec.
func Getenv(env []string) func(string) string {
	return func(key string) string {
		v := ""
		for _, kv := range env {
			if rest, ok := strings.CutPrefix(kv, key+"="); ok {
				v = rest
			}
		}
		return v
	}
}

// Settings is the part of the CLI's settings.json that this server reads.
type Settings struct {
	Security struct {
		Auth struct {
			SelectedType string `json:"selectedType"`
		} `json:"auth"`
	} `json:"security"`
	General struct {
		SessionRetention struct {
			Enabled *bool `json:"enabled"`
		} `json:"sessionRetention"`
	} `json:"general"`
}

// ParseSettings parses a settings.json (comments allowed, as the CLI
// allows them).
func ParseSettings(data []byte) (*Settings, error) {
	var s Settings
	if err := json.Unmarshal(StripComments(data), &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// StripComments blanks // and /* */ comments outside strings, as the CLI
// strips them from its settings files before parsing them, keeping
// offsets so that JSON errors still point at the right place.
func StripComments(data []byte) []byte {
	if !bytes.Contains(data, []byte("/")) {
		return data
	}
	out := bytes.Clone(data)
	inString := false
	for i := 0; i < len(out); i++ {
		c := out[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			j := bytes.Index(out[i+2:], []byte("*/"))
			end := len(out)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			for ; i < end; i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			i--
		}
	}
	return out
}
