// Package apicreds reads, from the environment alone, the credentials the
// Gemini API backend would use. It imports no SDK, so that choosing a
// backend and doctor cost a server nothing it does not use.
package apicreds

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// CredentialsHelp says which credentials the API backend accepts; errors
// about credentials end with it.
const CredentialsHelp = "The API backend accepts a Gemini API key in GEMINI_API_KEY or " +
	"GOOGLE_API_KEY (get one at https://aistudio.google.com/apikey), or Vertex AI: " +
	"GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION " +
	"(default global) and Application Default Credentials " +
	"(gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS), " +
	"or with an API key alone (Vertex AI express mode)."

// Creds is what the environment says about how to reach Gemini.
type Creds struct {
	OK       bool
	What     string // for people: which credentials, from where
	Vertex   bool
	Key      string
	KeyVar   string
	Project  string
	Location string
	ADC      string // where Application Default Credentials were found
	BaseURL  string // the endpoint override, "" for the default
}

// Credentials says, without any network request, whether the environment
// read through getenv holds credentials the API backend can use, and which
// (or, when not, what is missing). Backend auto-selection and doctor use
// it.
//
// GEMINI_API_KEY wins over GOOGLE_API_KEY when both are set, as in the
// Gemini CLI (the SDK alone would prefer GOOGLE_API_KEY).
func Credentials(getenv func(string) string) (ok bool, what string) {
	c := Read(getenv)
	return c.OK, c.What
}

func truthy(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "1" || v == "true"
}

// Read reads the credentials from the environment through getenv (nil
// means os.Getenv), without any network request.
func Read(getenv func(string) string) Creds {
	if getenv == nil {
		getenv = os.Getenv
	}
	var c Creds
	for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if k := strings.TrimSpace(getenv(v)); k != "" {
			c.Key, c.KeyVar = k, v
			break
		}
	}
	c.Vertex = truthy(getenv("GOOGLE_GENAI_USE_VERTEXAI"))
	endpoint := ""
	if c.Vertex {
		c.BaseURL = getenv("GOOGLE_VERTEX_BASE_URL")
	} else {
		c.BaseURL = getenv("GOOGLE_GEMINI_BASE_URL")
	}
	if c.BaseURL != "" {
		endpoint = ", endpoint " + c.BaseURL
	}
	if !c.Vertex {
		if c.Key == "" {
			c.What = "no Gemini API key: neither GEMINI_API_KEY nor GOOGLE_API_KEY is set, and " +
				"GOOGLE_GENAI_USE_VERTEXAI is not true"
			return c
		}
		c.OK, c.What = true, "Gemini API key from "+c.KeyVar+endpoint
		return c
	}
	c.Project = getenv("GOOGLE_CLOUD_PROJECT")
	c.Location = getenv("GOOGLE_CLOUD_LOCATION")
	if c.Location == "" {
		c.Location = getenv("GOOGLE_CLOUD_REGION")
	}
	if c.Project == "" {
		if c.Key != "" {
			c.Location = ""
			c.OK, c.What = true, "Vertex AI express mode with the API key from "+c.KeyVar+endpoint
			return c
		}
		c.What = "Vertex AI is selected (GOOGLE_GENAI_USE_VERTEXAI) but GOOGLE_CLOUD_PROJECT is not set"
		return c
	}
	// A project, when set, wins over an API key, as in the SDK.
	c.Key, c.KeyVar = "", ""
	if c.Location == "" {
		c.Location = "global"
	}
	where := "Vertex AI, project " + c.Project + ", location " + c.Location
	c.ADC = adcSource(getenv)
	if c.ADC == "" {
		c.What = where + ", but no Application Default Credentials were found: run " +
			"`gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
		return c
	}
	c.OK, c.What = true, where+", Application Default Credentials from "+c.ADC+endpoint
	return c
}

// adcSource says where Application Default Credentials would come from,
// looking only at files and variables: the key file named by
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's well-known file, or, on Google
// Cloud runtimes, which announce themselves in the environment, the
// metadata server. "" means none.
func adcSource(getenv func(string) string) string {
	if p := getenv("GOOGLE_APPLICATION_CREDENTIALS"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		return ""
	}
	var dir string
	switch {
	case getenv("CLOUDSDK_CONFIG") != "":
		dir = getenv("CLOUDSDK_CONFIG")
	case runtime.GOOS == "windows" && getenv("APPDATA") != "":
		dir = filepath.Join(getenv("APPDATA"), "gcloud")
	case getenv("HOME") != "":
		dir = filepath.Join(getenv("HOME"), ".config", "gcloud")
	}
	if dir != "" {
		p := filepath.Join(dir, "application_default_credentials.json")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, v := range []string{"GCE_METADATA_HOST", "K_SERVICE", "GAE_SERVICE", "FUNCTION_TARGET"} {
		if getenv(v) != "" {
			return "the metadata server (" + v + " is set)"
		}
	}
	return ""
}
