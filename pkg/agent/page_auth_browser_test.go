package agent_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/outboxhq/outbox/internal/testutil"
	"github.com/outboxhq/outbox/pkg/agent"
)

// TestPage_InABrowser_AsksForTheAdminTokenAndThenWorks opens the status page of an agent with
// admin.token set: the browser gets a login prompt (answered here as an operator would, with
// the token as the password), and the page then loads its data and refreshes.
func TestPage_InABrowser_AsksForTheAdminTokenAndThenWorks(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		testutil.MissingTool(t, "no chromium on PATH (set CHROMIUM, or apt-get install chromium): the status page is not checked in a browser")
	}
	h := start(t, setup{agent: agent.Config{WriteKeys: []string{"wk"}, Admin: agent.AdminConfig{Token: "adm-browser"}}})
	if r := h.do(req{path: "/v1/track", body: []byte(trackEvent), writeKey: "wk"}); r.code != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.code, r.body)
	}
	bctx, events := startBrowser(t, browser)
	// The browser's login prompt, answered as an operator would: Fetch pauses every request
	// and hands its auth challenges to the test (the listener only queues them: it may not
	// call the browser itself).
	var prompts atomic.Int32
	paused := make(chan any, 256)
	if err := chromedp.Listen(bctx, func(ev any) {
		switch ev.(type) {
		case *fetch.EventRequestPaused, *fetch.EventAuthRequired:
			paused <- ev
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range paused {
			switch ev := ev.(type) {
			case *fetch.EventRequestPaused:
				_, _ = chromedp.Call(bctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
			case *fetch.EventAuthRequired:
				prompts.Add(1)
				_, _ = chromedp.Call(bctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
					AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
						Username: "operator", Password: "adm-browser"}})
			}
		}
	}()
	handleAuth := true
	if _, err := chromedp.Call(bctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &handleAuth}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Navigate(h.url+"/")); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	ps := waitPage(t, bctx, "Number(document.body.dataset.refreshes || 0) >= 2")
	if prompts.Load() == 0 {
		t.Error("the browser was never asked for credentials")
	}
	st := agent.Status{}
	h.do(req{method: http.MethodGet, path: "/v1/status", header: map[string]string{"Authorization": "Bearer adm-browser"}}).json(t, &st)
	checkNumbers(t, ps, st)
	for _, e := range events.list() {
		t.Errorf("browser: %s", e)
	}
}

// TestPage_InABrowser_RefusesAReboundName opens the page of an agent without admin.token under
// a name that resolves to 127.0.0.1 (as DNS rebinding makes a web site's own name do): the
// agent refuses it, and the page never gets the agent's data.
func TestPage_InABrowser_RefusesAReboundName(t *testing.T) {
	browser := findChromium()
	if browser == "" {
		testutil.MissingTool(t, "no chromium on PATH (set CHROMIUM, or apt-get install chromium): the status page is not checked in a browser")
	}
	h := start(t, setup{})
	port := h.url[strings.LastIndex(h.url, ":")+1:]
	bctx, _ := startBrowser(t, browser, chromedp.Flag("host-resolver-rules", "MAP rebind.example 127.0.0.1"))
	resp, err := chromedp.RunResponse(bctx, chromedp.Navigate("http://rebind.example:"+port+"/"))
	if err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	status := resp.Status
	body, err := chromedp.Run(bctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusForbidden || !strings.Contains(body, "admin.allowed_hosts") {
		t.Fatalf("page under a rebound name = %d %q, want 403 naming admin.allowed_hosts", status, body)
	}
	// The same browser on 127.0.0.1 gets the page.
	resp, err = chromedp.RunResponse(bctx, chromedp.Navigate(h.url+"/"))
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("page on 127.0.0.1: %v %v", resp, err)
	}
}
