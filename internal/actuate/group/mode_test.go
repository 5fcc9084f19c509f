package group

import "testing"

func TestCloneURL(t *testing.T) {
	for api, want := range map[string]string{
		"":                                "https://github.com/acme/gitops.git",
		"https://api.github.com/":         "https://github.com/acme/gitops.git",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com/acme/gitops.git",
		"http://127.0.0.1:4000/api/v3":    "http://127.0.0.1:4000/acme/gitops.git",
	} {
		if got, err := CloneURL(api, "acme/gitops"); err != nil || got != want {
			t.Errorf("CloneURL(%q) = %q, %v; want %q", api, got, err, want)
		}
	}
}
