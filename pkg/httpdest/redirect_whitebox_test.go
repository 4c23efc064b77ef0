package httpdest

import (
	"net/http"
	"net/url"
	"testing"
)

func TestCheckRedirect_Policy(t *testing.T) {
	req := func(method, rawURL string, status int) *http.Request {
		u, _ := url.Parse(rawURL)
		return &http.Request{Method: method, URL: u, Response: &http.Response{StatusCode: status}}
	}
	via := func(n int, scheme string) []*http.Request {
		out := make([]*http.Request, n)
		for i := range out {
			out[i] = req(http.MethodPost, scheme+"://a/v1/batch", 0)
		}
		return out
	}
	tests := []struct {
		name   string
		next   *http.Request
		via    []*http.Request
		follow bool
	}{
		{"307 is followed", req("POST", "https://b/v1/batch", 307), via(1, "https"), true},
		{"308 is followed", req("POST", "https://b/v1/batch", 308), via(1, "https"), true},
		{"the third hop is followed", req("POST", "https://b/v1/batch", 307), via(3, "https"), true},
		{"a fourth hop is not", req("POST", "https://b/v1/batch", 307), via(4, "https"), false},
		{"https to http is never followed", req("POST", "http://b/v1/batch", 307), via(1, "https"), false},
		{"http to https is followed", req("POST", "https://b/v1/batch", 308), via(1, "http"), true},
		{"301 is not followed", req("GET", "https://b/v1/batch", 301), via(1, "https"), false},
		{"302 is not followed", req("GET", "https://b/v1/batch", 302), via(1, "https"), false},
		{"303 is not followed", req("GET", "https://b/v1/batch", 303), via(1, "https"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRedirect(tt.next, tt.via)
			if tt.follow && err != nil {
				t.Errorf("not followed: %v", err)
			}
			if !tt.follow && err != http.ErrUseLastResponse {
				t.Errorf("err = %v, want http.ErrUseLastResponse (the 3xx is returned)", err)
			}
		})
	}
}
