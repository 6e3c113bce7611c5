package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHostileClients: clients that hold connections open with half a header
// (slowloris), trickle a body, send huge headers or a huge body get a
// refusal or a closed connection within the limits, and while a hundred of
// them hang on, /healthz still answers at once.
func TestHostileClients(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if ok := asMaxBytes(err, &mbe); ok {
				http.Error(w, "too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "read %d", len(b))
	})
	s, err := StartWith(Options{Addr: "127.0.0.1:0", Metrics: NewMetrics(), Status: func() Status { return Status{} },
		Console: echo, Logger: slog.New(slog.DiscardHandler),
		ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: 600 * time.Millisecond, MaxHeaderBytes: 4 << 10, MaxBodyBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	addr := s.Addr()

	// closedWithin writes head, then w (one byte every 100 ms when trickle,
	// never finishing) on a fresh connection and reports how long the
	// server took to close it (or fails after 5 s).
	closedWithin := func(t *testing.T, head, w string, trickle bool) (time.Duration, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		if _, err := c.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		if trickle { // one byte every 100 ms, never finishing
			go func() {
				for i := 0; i < len(w); i++ {
					if _, err := c.Write([]byte{w[i]}); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
		} else if _, err := c.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the server held the connection for 5 s (%q)", got)
		}
		return time.Since(start), string(got)
	}

	t.Run("slowloris header", func(t *testing.T) {
		took, _ := closedWithin(t, "", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "+strings.Repeat("a", 200), true)
		if took > 2*time.Second {
			t.Errorf("a header trickled in held the connection %s (limit 300 ms)", took)
		}
	})
	t.Run("trickled body", func(t *testing.T) {
		took, _ := closedWithin(t, "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n", strings.Repeat("b", 200), true)
		if took < 500*time.Millisecond || took > 3*time.Second {
			t.Errorf("a body trickled in held the connection %s (limit 600 ms for the request)", took)
		}
	})
	t.Run("huge header", func(t *testing.T) {
		_, got := closedWithin(t, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("h", 64<<10)+"\r\n\r\n", "", false)
		if !strings.HasPrefix(got, "HTTP/1.1 431") {
			t.Errorf("64 KiB of headers: %q, want 431", firstLine(got))
		}
	})
	t.Run("declared huge body", func(t *testing.T) {
		resp, err := http.Post("http://"+addr+"/x", "text/plain", strings.NewReader(strings.Repeat("z", 4<<10)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a 4 KiB body: %d, want 413", resp.StatusCode)
		}
	})
	t.Run("undeclared huge body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
		go func() { // chunks until the server hangs up
			for range 64 {
				if _, err := fmt.Fprintf(c, "400\r\n%s\r\n", strings.Repeat("c", 1024)); err != nil {
					return
				}
			}
			fmt.Fprintf(c, "0\r\n\r\n")
		}()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a chunked 64 KiB body: %d, want 413", resp.StatusCode)
		}
	})
	t.Run("healthz under a hundred idle connections", func(t *testing.T) {
		var conns []net.Conn
		for range 100 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte("GET / HTTP/1.1\r\n"))
			conns = append(conns, c)
		}
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		start := time.Now()
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + addr + "/healthz")
		if err != nil {
			t.Fatalf("/healthz with 100 half-open requests: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("/healthz: %d", resp.StatusCode)
		}
		t.Logf("/healthz answered in %s beside 100 half-open requests", time.Since(start).Round(time.Millisecond))
	})
}

func asMaxBytes(err error, target **http.MaxBytesError) bool {
	mbe, ok := err.(*http.MaxBytesError)
	if ok {
		*target = mbe
	}
	return ok
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
