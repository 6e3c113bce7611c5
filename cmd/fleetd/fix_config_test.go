package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoSection is a target with a repository, as the fix stage needs.
const repoSection = `target:
  registry: "0x0000000000000000000000000000000000000001"
  faces: "http://127.0.0.1:1/{name}/"
  call: "http://127.0.0.1:1/call"
  fetch_allow: ["127.0.0.1:1"]
  repo:
    url: ./repo
`

func TestFixConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"unknown kind", repoSection + "forge:\n  kind: gitlab\n", "forge.kind"},
		{"keys without kind", repoSection + "forge:\n  owner: x\n", "forge.kind: required"},
		{"github without owner", repoSection + "forge:\n  kind: github\n  repo: r\n  token: t\n", "forge.owner"},
		{"github without repo", repoSection + "forge:\n  kind: github\n  owner: o\n  token: t\n", "forge.repo"},
		{"github without token", repoSection + "forge:\n  kind: github\n  owner: o\n  repo: r\n", "forge.token"},
		{"two tokens", repoSection + "forge:\n  kind: github\n  owner: o\n  repo: r\n  token: t\n  token_file: f\n", "forge.token_file"},
		{"bad base url", repoSection + "forge:\n  kind: github\n  owner: o\n  repo: r\n  token: t\n  base_url: api.github.com\n", "forge.base_url"},
		{"gitlocal with a token", repoSection + "forge:\n  kind: gitlocal\n  token: t\n", "kind gitlocal"},
		{"gitlocal on a remote", strings.Replace(repoSection, "./repo", "https://example.com/x.git", 1) + "forge:\n  kind: gitlocal\n", "target.repo.url"},
		{"forge without repo", "forge:\n  kind: gitlocal\n", "needs target.repo"},
		{"negative cap", "fixer:\n  max_open_prs: -1\n", "fixer.max_open_prs"},
		{"negative cooldown", "fixer:\n  cooldown: -1h\n", "fixer.cooldown"},
		{"negative bisect time", "fixer:\n  bisect_timeout: -1m\n", "fixer.bisect_timeout"},
		{"bad planner", "fixer:\n  planner: playbook\n", "fixer.planner"},
		{"unknown fixer key", "fixer:\n  max_prs: 3\n", `unknown key "max_prs" in fixer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(writeConfig(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
	ok := repoSection + "forge:\n  kind: github\n  owner: o\n  repo: r\n  token_file: tok\n"
	if _, err := LoadConfig(writeConfig(t, ok)); err != nil {
		t.Errorf("a valid forge section: %v", err)
	}
}

// TestForgeTokenFile: the token file must be private, and errors never
// carry its content.
func TestForgeTokenFile(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte("ghp_secretvalue\n"), 0o644)
	cfg := &Config{Forge: ForgeConfig{Kind: "github", TokenFile: tok}}
	if _, err := cfg.forgeToken(); err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), "secretvalue") {
		t.Errorf("a world-readable token file: %v", err)
	}
	os.Chmod(tok, 0o600)
	if got, err := cfg.forgeToken(); err != nil || got != "ghp_secretvalue" {
		t.Errorf("forgeToken = %q, %v", got, err)
	}
	os.WriteFile(tok, []byte("two tokens\n"), 0o600)
	if _, err := cfg.forgeToken(); err == nil || strings.Contains(err.Error(), "tokens") {
		t.Errorf("a malformed token file: %v", err)
	}
}
