package secrets

import (
	"path"
	"strings"
)

// CredentialFile reports whether a file is, by its name, one whose
// purpose is to hold credentials, and says what kind ("an SSH private
// key"). rel is slash-separated; only its last one or two elements count.
// The rules (matched without regard to case):
//   - environment files: .env, .env.* and .envrc, and NAME.env, except
//     templates named so: .env.example, .env.sample, .env.template,
//     .env.dist (.env.local.example…), which are written to be committed
//     and shared (their values are still masked like any file's);
//   - SSH private keys: id_rsa, id_dsa, id_ecdsa, id_ed25519,
//     id_ecdsa_sk, id_ed25519_sk (their .pub is a public key, sent);
//   - keys and key stores: *.pem, *.key, *.p12, *.pfx, *.jks, *.keystore,
//     *.ppk (PuTTY), *.gpg and *.pgp; a .pem holding only a certificate
//     is skipped too, since its name cannot tell;
//   - credential stores: .netrc, _netrc, .pgpass, .git-credentials,
//     .htpasswd, .npmrc and .pypirc (registry tokens), an AWS or gcloud
//     credentials file (credentials, credentials.json), Google OAuth
//     client secrets (client_secret*.json), a kubeconfig (kubeconfig,
//     .kube/config), Docker's .docker/config.json;
//   - Terraform state (*.tfstate, *.tfstate.backup), which holds the
//     secrets of every resource in clear.
func CredentialFile(rel string) (string, bool) {
	base := strings.ToLower(path.Base(rel))
	parent := strings.ToLower(path.Base(path.Dir(rel)))
	switch {
	case envFile(base):
		return "an environment file (.env), which holds secrets", true
	case sshKeyNames[base]:
		return "an SSH private key", true
	case keyExts[path.Ext(base)]:
		return "a key or key store (" + path.Ext(base) + ")", true
	case storeNames[base]:
		return "a credential store (" + base + ")", true
	case strings.HasPrefix(base, "client_secret") && strings.HasSuffix(base, ".json"):
		return "OAuth client secrets", true
	case base == "kubeconfig" || (parent == ".kube" && base == "config"):
		return "a kubeconfig, which holds cluster credentials", true
	case parent == ".docker" && base == "config.json":
		return "Docker's credential configuration", true
	case strings.HasSuffix(base, ".tfstate") || strings.HasSuffix(base, ".tfstate.backup"):
		return "Terraform state, which holds secrets in clear", true
	}
	return "", false
}

var sshKeyNames = map[string]bool{"id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true, "id_ecdsa_sk": true, "id_ed25519_sk": true}

var keyExts = map[string]bool{".pem": true, ".key": true, ".p12": true, ".pfx": true, ".jks": true, ".keystore": true, ".ppk": true, ".gpg": true, ".pgp": true}

var storeNames = map[string]bool{
	".netrc": true, "_netrc": true, ".pgpass": true, ".git-credentials": true, ".htpasswd": true,
	".npmrc": true, ".pypirc": true, "credentials": true, "credentials.json": true,
}

// envTemplates are the last parts of an environment file's name that
// make it a template.
var envTemplates = map[string]bool{"example": true, "sample": true, "template": true, "dist": true}

// envFile reports whether a lower-case base name is an environment file
// that is not a template.
func envFile(base string) bool {
	switch {
	case base == ".env" || base == ".envrc":
		return true
	case strings.HasPrefix(base, ".env."), strings.HasSuffix(base, ".env"):
		last := base[strings.LastIndexByte(base, '.')+1:]
		return !envTemplates[last]
	}
	return false
}
