package browser

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestProxyStreams: the proxy hands a page each part of a response as
// the site sends it (server-sent events, a long poll, a streamed fetch),
// not the whole once the body ends: the site sends its headers and a first
// event, then waits for the client to have read that event before it ends
// the stream.
func TestProxyStreams(t *testing.T) {
	read := make(chan struct{})
	s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read:
			fmt.Fprint(w, "data: second\n\n")
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	}))
	p, err := startProxy(allowOnly(s.URL), nil, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close() })
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr()})}, Timeout: 30 * time.Second}
	start := time.Now()
	resp, err := c.Get(s.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || first != "data: first\n" {
		t.Fatalf("first event %q, %v", first, err)
	}
	close(read)
	br.ReadString('\n')
	second, err := br.ReadString('\n')
	if err != nil || second != "data: second\n" {
		t.Fatalf("the site ended the stream without the client having read its first event (after %s): the proxy held the response until its body ended; second %q, %v",
			time.Since(start).Round(time.Millisecond), second, err)
	}
}
