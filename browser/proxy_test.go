package browser

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// TestProxyStreams: the proxy hands a page each part of a response as
// the site sends it (server-sent events, a long poll, a streamed fetch),
// not the whole once the body ends: the site sends its headers and a first
// event, then waits for the client to have read that event before it ends
// the stream. Over http and inside a tunnel (https).
func TestProxyStreams(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[secure], func(t *testing.T) { testProxyStreams(t, secure) })
	}
}

func testProxyStreams(t *testing.T, secure bool) {
	read := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-read:
			fmt.Fprint(w, "data: second\n\n")
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	})
	s := httptest.NewUnstartedServer(h)
	var roots *x509.CertPool
	if secure {
		s.StartTLS()
		roots = x509.NewCertPool()
		roots.AddCert(s.Certificate())
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	p, err := startProxy(allowOnly(s.URL), nil, 5*time.Second, roots)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.close() })
	// The proxy's own certificate inside the tunnel is what Chromium
	// trusts by its key (--ignore-certificate-errors-spki-list); this
	// client, on loopback, takes it as is.
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr()}), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
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
