package api

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"google.golang.org/genai"
)

// geminiEndpoint is the Gemini API's own address, set explicitly so that
// the SDK never picks an endpoint from the process environment behind
// Options.Getenv's back.
const geminiEndpoint = "https://generativelanguage.googleapis.com/"

// CredentialsHelp says which credentials the API backend accepts; errors
// about credentials end with it.
const CredentialsHelp = "The API backend accepts a Gemini API key in GEMINI_API_KEY or " +
	"GOOGLE_API_KEY (get one at https://aistudio.google.com/apikey), or Vertex AI: " +
	"GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION " +
	"(default global) and Application Default Credentials " +
	"(gcloud auth application-default login, or GOOGLE_APPLICATION_CREDENTIALS), " +
	"or with an API key alone (Vertex AI express mode)."

// creds is what the environment says about how to reach Gemini.
type creds struct {
	ok       bool
	what     string // for people: which credentials, from where
	vertex   bool
	key      string
	keyVar   string
	project  string
	location string
	adc      string // where Application Default Credentials were found
	baseURL  string // the endpoint override, "" for the default
}

// Credentials says, without any network request, whether the environment
// read through getenv holds credentials the API backend can use, and which
// (or, when not, what is missing). Backend auto-selection and doctor use
// it.
//
// GEMINI_API_KEY wins over GOOGLE_API_KEY when both are set, as in the
// Gemini CLI (the SDK alone would prefer GOOGLE_API_KEY).
func Credentials(getenv func(string) string) (ok bool, what string) {
	c := readCreds(getenv)
	return c.ok, c.what
}

func truthy(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v == "1" || v == "true"
}

func readCreds(getenv func(string) string) creds {
	if getenv == nil {
		getenv = os.Getenv
	}
	var c creds
	for _, v := range []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"} {
		if k := strings.TrimSpace(getenv(v)); k != "" {
			c.key, c.keyVar = k, v
			break
		}
	}
	c.vertex = truthy(getenv("GOOGLE_GENAI_USE_VERTEXAI"))
	endpoint := ""
	if c.vertex {
		c.baseURL = getenv("GOOGLE_VERTEX_BASE_URL")
	} else {
		c.baseURL = getenv("GOOGLE_GEMINI_BASE_URL")
	}
	if c.baseURL != "" {
		endpoint = ", endpoint " + c.baseURL
	}
	if !c.vertex {
		if c.key == "" {
			c.what = "no Gemini API key: neither GEMINI_API_KEY nor GOOGLE_API_KEY is set, and " +
				"GOOGLE_GENAI_USE_VERTEXAI is not true"
			return c
		}
		c.ok, c.what = true, "Gemini API key from "+c.keyVar+endpoint
		return c
	}
	c.project = getenv("GOOGLE_CLOUD_PROJECT")
	c.location = getenv("GOOGLE_CLOUD_LOCATION")
	if c.location == "" {
		c.location = getenv("GOOGLE_CLOUD_REGION")
	}
	if c.project == "" {
		if c.key != "" {
			c.location = ""
			c.ok, c.what = true, "Vertex AI express mode with the API key from "+c.keyVar+endpoint
			return c
		}
		c.what = "Vertex AI is selected (GOOGLE_GENAI_USE_VERTEXAI) but GOOGLE_CLOUD_PROJECT is not set"
		return c
	}
	// A project, when set, wins over an API key, as in the SDK.
	c.key, c.keyVar = "", ""
	if c.location == "" {
		c.location = "global"
	}
	where := "Vertex AI, project " + c.project + ", location " + c.location
	c.adc = adcSource(getenv)
	if c.adc == "" {
		c.what = where + ", but no Application Default Credentials were found: run " +
			"`gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS"
		return c
	}
	c.ok, c.what = true, where+", Application Default Credentials from "+c.adc+endpoint
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

// clientConfig is the SDK's configuration for c, with baseURL (when not
// "") overriding the endpoint.
func (c creds) clientConfig(baseURL string) *genai.ClientConfig {
	if baseURL == "" {
		baseURL = c.baseURL
	}
	cc := &genai.ClientConfig{}
	if c.vertex {
		cc.Backend = genai.BackendVertexAI
		cc.APIKey, cc.Project, cc.Location = c.key, c.project, c.location
	} else {
		cc.Backend = genai.BackendGeminiAPI
		cc.APIKey = c.key
		if baseURL == "" {
			baseURL = geminiEndpoint
		}
	}
	cc.HTTPOptions.BaseURL = baseURL
	return cc
}
